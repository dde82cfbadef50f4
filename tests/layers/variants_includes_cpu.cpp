// Does not compile: variants call the op interface, never the CPU backend behind it.
#include "cpu/cpu_backend.h"
