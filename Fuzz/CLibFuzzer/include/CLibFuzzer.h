// libFuzzer's driver, linked in by -sanitize=fuzzer. SwiftPM gives every executable its own
// entry point, so each fuzz target's @main calls this instead of relying on libFuzzer's main().
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
