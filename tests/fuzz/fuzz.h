/* SPDX-License-Identifier: MIT */
/* The libFuzzer entry point every target defines. Built two ways: with clang -fsanitize=fuzzer
 * (scripts/fuzz), and with replay.c's main() so each corpus replays under meson test. */
#pragma once

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
