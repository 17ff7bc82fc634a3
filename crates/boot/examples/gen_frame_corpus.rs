//! Writes the seed corpus of the `boot_frame` fuzz target.
//!
//! ```text
//! cargo run -p sss-boot --example gen_frame_corpus [OUT_DIR]
//! ```
//!
//! One frame of every kind, and the whole conversation of a task of a
//! two-task job as one stream. `OUT_DIR` defaults to
//! `fuzz/corpus/boot_frame` at the workspace root.

use std::path::PathBuf;

use sss_boot::frame::{
    gathered, hello, round, write_frame, ERROR, GATHERED, HELLO, ROUND, WELCOME,
};

fn frame(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    write_frame(&mut b, kind, body).expect("writing to a Vec");
    b
}

fn main() {
    let out = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/boot_frame")
        });
    std::fs::create_dir_all(&out).expect("create output directory");
    let parts: [&[u8]; 2] = [b"addr-of-rank-0", b""];
    let seeds = [
        ("hello", frame(HELLO, &hello(7, 1, 2, &[0x5a; 32]))),
        ("welcome", frame(WELCOME, &[])),
        ("round", frame(ROUND, &round(0, b"addr-of-rank-1"))),
        (
            "gathered",
            frame(GATHERED, &gathered(0, parts.iter().copied())),
        ),
        ("error", frame(ERROR, b"rank 1 already joined")),
        (
            "conversation",
            [
                frame(HELLO, &hello(7, 1, 2, &[0x5a; 32])),
                frame(WELCOME, &[]),
                frame(ROUND, &round(0, b"x")),
                frame(GATHERED, &gathered(0, parts.iter().copied())),
                frame(ROUND, &round(1, b"")),
            ]
            .concat(),
        ),
    ];
    for (name, bytes) in &seeds {
        let path = out.join(format!("seed-{name}"));
        std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }
    eprintln!("wrote {} seeds to {}", seeds.len(), out.display());
}
