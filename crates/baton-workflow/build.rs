//! The built-in workflow definitions (`workflows/*.yaml`) are embedded as
//! written, for people and for the runs that pin them by their text, and a
//! second time as compact JSON that the process parses instead: the YAML
//! parser took ~14 M instructions (a few milliseconds, on the first
//! pipeline call of every server) for 13 KB of definitions, serde_json a
//! small fraction of that. The JSON is the same document (the YAML read
//! into a JSON value); a unit test checks that both parse to equal
//! definitions. Nothing is downloaded; only the two files are read.

use std::path::Path;

/// The built-in definition files, in `workflows/`.
const BUILTIN: [&str; 2] = ["forge.yaml", "issue.yaml"];

fn main() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    for file in BUILTIN {
        let path = Path::new(&manifest).join("workflows").join(file);
        println!("cargo:rerun-if-changed={}", path.display());
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        let value: serde_json::Value = serde_saphyr::from_str(&text)
            .unwrap_or_else(|e| panic!("{} is not valid YAML: {e}", path.display()));
        let json = serde_json::to_string(&value).expect("a JSON value serialises");
        let target = Path::new(&out).join(file.replace(".yaml", ".json"));
        std::fs::write(&target, json)
            .unwrap_or_else(|e| panic!("writing {}: {e}", target.display()));
    }
}
