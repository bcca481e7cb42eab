/* What a generated executable's main looks like. TEST_DESC picks the variant. */
#include "model.h"
#include "tgc_runtime.h"

int main(int argc, char** argv) { return tgc_main(&TEST_DESC, argc, argv); }
