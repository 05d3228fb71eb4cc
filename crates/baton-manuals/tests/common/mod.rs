//! Shared fixture: the reference project's test manuals plus a few extras.
#![allow(
    dead_code,
    reason = "shared by several test or bench targets; each uses part of it"
)]

use std::path::{Path, PathBuf};

use baton_manuals::{ManualConfig, ManualError, ManualErrorCode, ManualService};
use serde_json::Value;

pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
}

impl Fixture {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("manuals");
        write(
            &root.join("m1/rules.md"),
            "# 総則\n対象です。\n## 例外\nこの場合は対象外です。\n### 参照\n別表を参照。\n",
        );
        write(
            &root.join("m1/policy.json"),
            r#"{"title":"支払い","except":"不適用あり"}"#,
        );
        write(&root.join("m1/notes.txt"), "not a manual file\n");
        write(&root.join("m1/sub/more.md"), "# 追加\n追加の説明です。\n");
        write(&root.join("m2/appendix.md"), "# 手順\nフローを実施する。\n");
        Fixture { dir, root }
    }

    pub fn config(&self) -> ManualConfig {
        ManualConfig::new(&self.root)
    }

    pub fn service(&self) -> ManualService {
        ManualService::open(self.config()).expect("open")
    }

    pub fn service_with(&self, edit: impl FnOnce(&mut ManualConfig)) -> ManualService {
        let mut config = self.config();
        edit(&mut config);
        ManualService::open(config).expect("open")
    }

    pub fn write(&self, rel: &str, text: &str) {
        write(&self.root.join(rel), text);
    }
}

pub fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(path, text).expect("write");
}

/// The error code of a result.
pub fn code<T: std::fmt::Debug>(r: Result<T, ManualError>) -> ManualErrorCode {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.code,
    }
}

/// Serialises an output to JSON.
pub fn json<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).expect("serialise")
}

/// The six tools called with raw JSON arguments, as an adapter calls them:
/// `XInput::from_json` (seed 002's argument rules), then the typed call.
pub trait JsonTools {
    fn ls_json(&self, args: Value) -> Result<baton_manuals::LsOutput, ManualError>;
    fn toc_json(&self, args: Value) -> Result<baton_manuals::TocOutput, ManualError>;
    fn find_json(&self, args: Value) -> Result<baton_manuals::FindOutput, ManualError>;
    fn hits_json(&self, args: Value) -> Result<baton_manuals::HitsOutput, ManualError>;
    fn read_json(&self, args: Value) -> Result<baton_manuals::ReadOutput, ManualError>;
    fn scan_json(&self, args: Value) -> Result<baton_manuals::ScanOutput, ManualError>;
}

impl JsonTools for ManualService {
    fn ls_json(&self, args: Value) -> Result<baton_manuals::LsOutput, ManualError> {
        self.ls(baton_manuals::LsInput::from_json(&args)?)
    }
    fn toc_json(&self, args: Value) -> Result<baton_manuals::TocOutput, ManualError> {
        self.toc(baton_manuals::TocInput::from_json(&args)?)
    }
    fn find_json(&self, args: Value) -> Result<baton_manuals::FindOutput, ManualError> {
        self.find(baton_manuals::FindInput::from_json(&args)?)
    }
    fn hits_json(&self, args: Value) -> Result<baton_manuals::HitsOutput, ManualError> {
        self.hits(baton_manuals::HitsInput::from_json(&args)?)
    }
    fn read_json(&self, args: Value) -> Result<baton_manuals::ReadOutput, ManualError> {
        self.read(baton_manuals::ReadInput::from_json(&args)?)
    }
    fn scan_json(&self, args: Value) -> Result<baton_manuals::ScanOutput, ManualError> {
        self.scan(baton_manuals::ScanInput::from_json(&args)?)
    }
}
