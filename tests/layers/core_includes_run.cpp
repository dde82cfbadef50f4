// Does not compile: core is the lowest layer; run.h is the run layer's public header.
#include <attnprof/run.h>
