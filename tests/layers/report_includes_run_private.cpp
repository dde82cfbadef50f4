// Does not compile: report sits below run and sees none of its headers.
#include "run/preflight.h"
