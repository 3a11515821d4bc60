#ifndef AERIE_CLIBPQ_SHIM_H
#define AERIE_CLIBPQ_SHIM_H
#include <postgresql/libpq-fe.h>
#endif
