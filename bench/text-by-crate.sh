#!/bin/sh
# The text of a binary by crate, largest first: `bench/text-by-crate.sh target/release/runvil [N]`.
#
# A short stand-in for `cargo bloat --crates` that needs no build of its own: it sums the sizes
# of the function symbols (`nm -S`, demangled) by the crate that begins each symbol's path. An
# impl of another crate's trait (`<Type as Trait>::f`) counts for the type's crate, or for the
# trait's when the type is the standard library's or a type parameter; a generic of the
# standard library made for our types (`Vec<Ours>`) counts as `std`, as cargo-bloat counts it.
# Symbols with no Rust path are C and assembly: in runvil's tree, aws-lc-sys's cryptography.
# Functions inlined into others count where they were inlined.
set -eu
bin=${1:?usage: text-by-crate.sh BINARY [N]}
top=${2:-10}
nm -C -S -t d "$bin" | awk '
function crate_of(path,    c) {
    sub(/^(&|mut |\*const |\*mut |\[|\(|dyn )+/, "", path)
    c = path
    sub(/(::|<|>|,| ).*$/, "", c)
    return c
}
$3 ~ /^[tTwW]$/ {
    size = $2 + 0
    sym = $0
    sub(/^[^ ]+ [^ ]+ [^ ]+ /, "", sym)
    if (sym !~ /::/) { crate = "[C/asm: aws-lc-sys]" }
    else if (substr(sym, 1, 1) == "<") {
        inner = substr(sym, 2)
        crate = crate_of(inner)
        if (crate ~ /^(std|core|alloc|[A-Z]|str|u8|usize|i64|u64|f64|bool|char)$/ && match(inner, / as [^>]*/)) {
            trait = crate_of(substr(inner, RSTART + 4))
            if (trait !~ /^(std|core|alloc)$/) crate = trait
        }
    } else { crate = crate_of(sym) }
    if (crate ~ /^(core|alloc|[A-Z]|str|u8|usize|i64|u64|f64|bool|char)$/) crate = "std"
    total += size; by[crate] += size
}
END {
    for (c in by) printf "%d %s\n", by[c], c
    printf "%d (all function symbols)\n", total
}' | sort -rn | awk -v top="$top" '
NR == 1 { total = $1; rest = $0; sub(/^[0-9]+ /, "", rest); line = rest; next }
NR <= top + 1 { name = $0; sub(/^[0-9]+ /, "", name); printf "%-24s %9.2f MB %5.1f %%\n", name, $1 / 1e6, 100 * $1 / total }
END { printf "%-24s %9.2f MB\n", line, total / 1e6 }'
