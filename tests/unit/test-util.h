/* SPDX-License-Identifier: MIT */
/* cmocka includes in the order it needs, plus small helpers shared by the unit tests. */
#pragma once

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#define fixture(name) FIXTURE_DIR "/" name
