// .npy reading and writing (format version 1.0/2.0, little-endian, C order).
#pragma once
#include <string>

#include "ir/tensor.h"

namespace tgc {

HostTensor read_npy(const std::string& path);  // throws tgc::Error naming the file
// Writes to a temporary file and renames it, so a failure never leaves half a file behind.
void write_npy(const std::string& path, const HostTensor& t);
// ONNX names made safe for file names: characters outside [A-Za-z0-9._-] become '_'.
std::string file_safe(const std::string& name);

}  // namespace tgc
