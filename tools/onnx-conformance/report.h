// `onnx-conformance report OUT.md RESULTS.tsv... [--generated-by CMD] [--revision TEXT]`: merges saved runs (one
// per target) into the markdown conformance report: pass / fail / unsupported per op type and
// target, per data dir, the cpu pass rate on node cases, every failure and every exclusion.
#pragma once

namespace conformance {

int report_main(int argc, char** argv);  // argv[0] is "report"

}  // namespace conformance
