//! Writes the seed corpus of the `parse` fuzz target from the test vectors.
//!
//! ```text
//! cargo run -p sss-wire --example gen_corpus [OUT_DIR]
//! ```
//!
//! Each vector of `testdata/vectors-v1.json` becomes one file
//! `seed-valid-<name>` or `seed-invalid-<name>` holding its bytes, in
//! `OUT_DIR` (default `fuzz/corpus/parse` at the workspace root). Reusing
//! the vectors keeps a single hand-checked list of packets: every kind and
//! option for the fuzzer to mutate, and a malformed case per error.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("../../fuzz/corpus/parse"));
    let text = std::fs::read_to_string(manifest.join("testdata/vectors-v1.json"))
        .expect("read testdata/vectors-v1.json");
    let vectors: Vec<serde_json::Value> = serde_json::from_str(&text).expect("vectors are JSON");
    std::fs::create_dir_all(&out).expect("create output directory");
    for v in &vectors {
        let name = v["name"].as_str().expect("vector name");
        let valid = v["valid"].as_bool().expect("vector validity");
        let bytes = hex::decode(v["hex"].as_str().expect("vector hex")).expect("hex");
        let prefix = if valid { "valid" } else { "invalid" };
        let path = out.join(format!("seed-{prefix}-{name}"));
        std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }
    eprintln!("wrote {} seeds to {}", vectors.len(), out.display());
}
