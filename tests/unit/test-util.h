/* SPDX-License-Identifier: MIT */
/* cmocka includes in the order it needs, plus small helpers shared by the unit tests. */
#pragma once

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#define fixture(name) FIXTURE_DIR "/" name

/* A millisecond in the units a test counts in: taskstats' ns, or the loop's and PSI's us. */
#define NS_PER_MS 1000000ULL
#define US_PER_MS 1000ULL

#include "base/unparsed.h"

/* Runs stmt and asserts that it noted exactly n unreadable lines of kind file (base/unparsed.h). */
#define assert_unparsed(file, n, stmt)                                                                                 \
        do {                                                                                                           \
                uint64_t unparsed_before_ = unparsed_count(file);                                                      \
                stmt;                                                                                                  \
                assert_int_equal(unparsed_count(file) - unparsed_before_, (uint64_t) (n));                             \
        } while (0)
