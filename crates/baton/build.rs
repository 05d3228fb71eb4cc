//! Release builds lay out the functions a session runs first together at
//! the start of `.text` (`startup.order`, read by the linker, LLD). The
//! kernel maps a binary's code in 64 KiB windows around each page it runs,
//! so code that runs at start spread over the whole binary makes most of it
//! resident; clustered, a few windows hold it (docs/performance.md "Memory").
//!
//! Only for release builds on x86_64 Linux, where rustc links with LLD by
//! default; `BATON_NO_SYMBOL_ORDER=1` turns it off (another linker, say).
//! Names the binary does not have (a renamed function, another profile's
//! symbol hashes) are skipped without a warning. Regenerate the file with
//! `scripts/startup-order`. Nothing is downloaded or generated here.

fn main() {
    println!("cargo:rerun-if-changed=startup.order");
    println!("cargo:rerun-if-env-changed=BATON_NO_SYMBOL_ORDER");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let target = std::env::var("TARGET").unwrap_or_default();
    let opted_out = std::env::var_os("BATON_NO_SYMBOL_ORDER").is_some_and(|v| v != "0");
    if !release || target != "x86_64-unknown-linux-gnu" || opted_out {
        return;
    }
    let Ok(dir) = std::env::var("CARGO_MANIFEST_DIR") else {
        return;
    };
    let order = std::path::Path::new(&dir).join("startup.order");
    println!(
        "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
        order.display()
    );
    println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
}
