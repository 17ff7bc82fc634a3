//! Gives libsss.so the soname `libsss.so.0`, as a shared library that is
//! installed next to others needs (programs record the soname, and the
//! installer links it to the versioned file). Programs linked in the build
//! tree find it there too: a `libsss.so.0` link to `libsss.so` is made in
//! the profile directory (`target/release`) the library lands in.

use std::path::Path;

/// The soname's number; bumped when the C ABI breaks.
const ABI_MAJOR: u32 = 0;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libsss.so.{ABI_MAJOR}");
    // OUT_DIR is <profile>/build/sss-capi-<hash>/out.
    let Some(profile) = std::env::var_os("OUT_DIR")
        .and_then(|o| Path::new(&o).ancestors().nth(3).map(Path::to_path_buf))
    else {
        return;
    };
    let link = profile.join(format!("libsss.so.{ABI_MAJOR}"));
    if std::fs::symlink_metadata(&link).is_err() {
        // Dangling until the library is linked; harmless if it fails.
        let _ = std::os::unix::fs::symlink("libsss.so", &link);
    }
}
