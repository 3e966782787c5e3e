# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# A build toolchain for the test image, copied from this host (no registry, no package download), and a
# small C project to build with it: what an agent's normal day looks like, for the hardened-workload test
# and the hardening benchmark.
#
#   toolchain_add ROOT          copies gcc (driver, cc1, collect2, the LTO plugin, crt files, libgcc), as,
#                               ld, make and git into the rootfs ROOT (from build_test_rootfs) with their
#                               shared libraries, libc's development files and the C headers the sample
#                               projects include (found with gcc -M); `chroot ROOT gcc` works afterwards
#   toolchain_sample_project D  writes D/calc: a library, a program, tests (`make check`), `make install`
#   toolchain_sample_tarball F  writes F: greet.tar.gz, a package to install with `make install PREFIX=...`
#
# Needs gcc, make and git on the host (Debian 12: build-essential, git).

_toolchain_copy() {
        local root=$1 f=$2 dest=${3:-$2}
        mkdir -p "$root$(dirname "$dest")" && cp -L "$f" "$root$dest"
}

_toolchain_copy_with_libs() {
        local root=$1 f=$2 dest=${3:-$2} lib
        _toolchain_copy "$root" "$f" "$dest" || return 1
        for lib in $(ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3; next } $1 ~ /^\// { print $1 }'); do
                [ -e "$root$lib" ] || _toolchain_copy "$root" "$lib" || return 1
        done
}

toolchain_sample_project() {
        local d=${1:?toolchain_sample_project DIR}/calc
        mkdir -p "$d/src" "$d/tests"
        cat >"$d/src/calc.h" <<'EOF'
#pragma once
long calc_add(long a, long b);
long calc_mul(long a, long b);
long calc_eval(const char *expr);
EOF
        cat >"$d/src/calc.c" <<'EOF'
#include <stdlib.h>
#include <string.h>
#include "calc.h"
long calc_add(long a, long b) { return a + b; }
long calc_mul(long a, long b) { return a * b; }
/* "A+B" or "A*B" */
long calc_eval(const char *expr) {
        char *end;
        long a = strtol(expr, &end, 10), b = strtol(end + 1, NULL, 10);
        return *end == '*' ? calc_mul(a, b) : calc_add(a, b);
}
EOF
        cat >"$d/src/main.c" <<'EOF'
#include <stdio.h>
#include "calc.h"
int main(int argc, char **argv) {
        for (int i = 1; i < argc; i++)
                printf("%s = %ld\n", argv[i], calc_eval(argv[i]));
        return 0;
}
EOF
        cat >"$d/tests/test_calc.c" <<'EOF'
#include <stdio.h>
#include "../src/calc.h"
static int failed, run;
#define CHECK(c) do { run++; if (!(c)) { failed++; printf("FAIL: %s\n", #c); } } while (0)
int main(void) {
        CHECK(calc_add(2, 3) == 5);
        CHECK(calc_mul(4, 5) == 20);
        CHECK(calc_eval("6*7") == 42);
        CHECK(calc_eval("40+2") == 42);
        printf("%s: %d tests, %d failed\n", failed ? "FAIL" : "PASS", run, failed);
        return failed != 0;
}
EOF
        cat >"$d/Makefile" <<'EOF'
CC ?= cc
CFLAGS ?= -O2 -Wall
PREFIX ?= /usr/local
all: calc
calc: src/main.o src/calc.o
	$(CC) -o $@ $^
tests/test_calc: tests/test_calc.o src/calc.o
	$(CC) -o $@ $^
check: tests/test_calc
	./tests/test_calc
install: calc
	mkdir -p $(PREFIX)/bin && cp calc $(PREFIX)/bin/calc
clean:
	rm -f calc tests/test_calc src/*.o tests/*.o
.PHONY: all check install clean
EOF
}

toolchain_sample_tarball() {
        local out=${1:?toolchain_sample_tarball FILE} d
        d=$(mktemp -d) || return 1
        mkdir -p "$d/greet"
        cat >"$d/greet/greet.c" <<'EOF'
#include <stdio.h>
int main(void) { puts("hello from greet"); return 0; }
EOF
        printf 'PREFIX ?= /usr/local\ngreet: greet.c\n\t$(CC) -O2 -o $@ $<\ninstall: greet\n\tmkdir -p $(PREFIX)/bin && cp greet $(PREFIX)/bin/greet\n' \
                >"$d/greet/Makefile"
        tar -C "$d" -czf "$out" greet
        rm -rf "$d"
}

toolchain_add() {
        local root=${1:?toolchain_add ROOT} gcc_dir f tmp hdr
        command -v gcc >/dev/null && command -v make >/dev/null && command -v git >/dev/null || {
                echo "toolchain: gcc, make and git are needed on the host" >&2
                return 1
        }
        gcc_dir=$(dirname "$(gcc -print-libgcc-file-name)")

        _toolchain_copy_with_libs "$root" "$(readlink -f "$(command -v gcc)")" /usr/bin/gcc || return 1
        ln -sf gcc "$root/usr/bin/cc"
        _toolchain_copy_with_libs "$root" "$(readlink -f "$(command -v as)")" /usr/bin/as || return 1
        _toolchain_copy_with_libs "$root" "$(readlink -f "$(command -v ld)")" /usr/bin/ld || return 1
        _toolchain_copy_with_libs "$root" "$(command -v make)" /usr/bin/make || return 1
        _toolchain_copy_with_libs "$root" "$(command -v git)" /usr/bin/git || return 1
        for f in cc1 collect2 lto-wrapper liblto_plugin.so; do
                _toolchain_copy_with_libs "$root" "$gcc_dir/$f" || return 1
        done
        for f in "$gcc_dir"/crt*.o "$gcc_dir"/libgcc.a "$gcc_dir"/libgcc_eh.a "$gcc_dir"/libgcc_s.so; do
                _toolchain_copy "$root" "$f" || return 1
        done
        cp -r "$gcc_dir/include" "$root$gcc_dir/" || return 1
        # libc's development files, at the paths its linker scripts name.
        for f in /usr/lib/x86_64-linux-gnu/{Scrt1.o,crt1.o,crti.o,crtn.o,libc.so,libc_nonshared.a,libm.so,libm.so.6,libmvec.so.1} \
                /lib/x86_64-linux-gnu/{libc.so.6,libm.so.6,libgcc_s.so.1} /usr/lib/x86_64-linux-gnu/libgcc_s.so.1; do
                [ -e "$f" ] || continue
                _toolchain_copy "$root" "$f" || return 1
        done
        # The headers the sample projects include, as gcc -M lists them.
        tmp=$(mktemp -d) || return 1
        toolchain_sample_project "$tmp"
        for f in "$tmp"/calc/src/*.c "$tmp"/calc/tests/*.c; do
                for hdr in $(gcc -M -O2 -I"$tmp/calc/src" "$f" | tr -d '\\' | tr ' ' '\n' | grep '^/usr/'); do
                        [ -e "$root$hdr" ] || _toolchain_copy "$root" "$hdr" || { rm -rf "$tmp"; return 1; }
                done
        done
        rm -rf "$tmp"
        mkdir -p "$root/usr/share/git-core/templates"
}
