#ifndef AERIE_CSODIUM_SHIM_H
#define AERIE_CSODIUM_SHIM_H
#include <sodium.h>
#endif
