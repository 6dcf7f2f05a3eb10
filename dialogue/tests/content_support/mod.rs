//! Shared by the `check_*` and `content_*` tests: small content folders written to a unique temp
//! directory, and matchers for the diagnostics they produce.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use banter_dialogue::check;
use banter_dialogue::content::Content;
use banter_dialogue::{Diagnostic, Problem, Severity};

/// A content folder under the system temp dir, removed when dropped.
pub struct TempContent {
    pub root: PathBuf,
    /// Conversation files as the test wrote them, before tagging: `edit` works on these, so a
    /// test's patterns never meet the `LineId`s the tagger added.
    written: std::cell::RefCell<std::collections::HashMap<String, String>>,
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

impl TempContent {
    /// An empty folder, unique per process and call.
    pub fn empty(tag: &str) -> TempContent {
        let root = std::env::temp_dir().join(format!(
            "banter-content-{tag}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).expect("create temp content folder");
        TempContent {
            root,
            written: Default::default(),
        }
    }

    /// The smallest clean game: one island, one NPC `keeper` speaking `Talk`, one catch quest
    /// `Fish` with objective `Catch`, and a base conversation with its offer and check flow.
    pub fn minimal(tag: &str) -> TempContent {
        let c = TempContent::empty(tag);
        c.write("world.json", WORLD);
        c.write("quests.json", QUESTS);
        c.write("dialogue/base/Talk.json", TALK);
        c
    }

    pub fn write(&self, relative: &str, text: &str) -> &Self {
        self.write_bytes(relative, text.as_bytes())
    }

    /// Writes a file. A conversation file is line-tagged first (as `strings tag` would), so a
    /// fixture reads as content a writer has tagged; [`TempContent::write_untagged`] does not.
    pub fn write_bytes(&self, relative: &str, bytes: &[u8]) -> &Self {
        let is_dialogue = relative.starts_with("dialogue/") && relative.ends_with(".json");
        let tagged = std::str::from_utf8(bytes)
            .ok()
            .filter(|_| is_dialogue)
            .and_then(|text| {
                let format = banter_dialogue::lines::Format::of(relative);
                let mut taken = std::collections::HashSet::new();
                banter_dialogue::lines::tag_file(relative, text, format, &mut taken).ok()
            })
            .map(|(text, _)| text);
        if tagged.is_some()
            && let Ok(text) = std::str::from_utf8(bytes)
        {
            self.written
                .borrow_mut()
                .insert(relative.to_owned(), text.to_owned());
        }
        self.write_untagged(relative, tagged.as_deref().map_or(bytes, str::as_bytes))
    }

    /// Writes a file as given.
    pub fn write_untagged(&self, relative: &str, bytes: &[u8]) -> &Self {
        let path = self.root.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create folder");
        }
        std::fs::write(&path, bytes).expect("write content file");
        self
    }

    /// Replaces `from` with `to` in a file, which must contain it.
    pub fn edit(&self, relative: &str, from: &str, to: &str) -> &Self {
        let written = self.written.borrow().get(relative).cloned();
        if let Some(text) = written {
            assert!(text.contains(from), "{relative} does not contain {from:?}");
            return self.write(relative, &text.replacen(from, to, 1));
        }
        let path = self.root.join(relative);
        let text = std::fs::read_to_string(&path).expect("read content file");
        assert!(text.contains(from), "{relative} does not contain {from:?}");
        std::fs::write(&path, text.replacen(from, to, 1)).expect("write content file");
        self
    }

    /// The path a diagnostic names for a file of this folder.
    pub fn file(&self, relative: &str) -> String {
        self.root.join(relative).display().to_string()
    }

    pub fn load(&self) -> (Content, Vec<Diagnostic>) {
        check::load_and_check(&self.root)
    }

    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        self.load().1
    }

    /// The one error about file `relative` as a whole (on no node) that matches `problem`:
    /// [`expect_one`] with this folder's path for the file.
    pub fn expect_file_error<'a>(
        &self,
        diagnostics: &'a [Diagnostic],
        relative: &str,
        problem: impl Fn(&Problem) -> bool,
    ) -> &'a Diagnostic {
        expect_one(
            diagnostics,
            Severity::Error,
            &self.file(relative),
            None,
            problem,
        )
    }
}

impl Drop for TempContent {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

pub const WORLD: &str = r#"{
  "Islands": [ { "Id": "home", "Name": "Home" } ],
  "Npcs": [
    { "Id": "keeper", "Name": "Keeper", "Island": "home", "Position": [0, 0, 0], "Conversation": "Talk" }
  ]
}"#;

pub const QUESTS: &str = r#"[
  {
    "Id": "Fish", "Giver": "keeper", "Kind": "side",
    "Objectives": [ { "Id": "Catch", "Kind": "catch", "Target": 2, "Island": "home" } ],
    "Nodes": { "Greeting": "Fish_Greet", "Check": "Fish_Check", "Completion": "Fish_Done" }
  }
]"#;

pub const TALK: &str = r#"{
  "FirstNode": "Hello",
  "Speaker": "Keeper",
  "Hello": { "Text": "Hi.", "Responses": [
    { "Text": "Work?", "NextNode": "Fish_Greet" },
    { "Text": "Bye.", "NextNode": "Bye" } ] },
  "Bye": { "Text": "Bye.", "Close": true },
  "Fish_Greet": { "Text": "Catch two.", "Responses": [
    { "Text": "Yes.", "Actions": [ { "Type": "AcceptQuest", "QuestId": "Fish" } ], "NextNode": "Bye" },
    { "Text": "No.", "NextNode": "Bye" } ] },
  "Fish_Check": { "Text": "Well?", "Responses": [
    { "Text": "Look.", "Actions": [ { "Type": "CheckQuest", "QuestId": "Fish",
        "SuccessNode": "Fish_Done", "FailureNode": "Fish_NotYet" } ] } ] },
  "Fish_NotYet": { "Text": "Not yet.", "Close": true },
  "Fish_Done": { "Text": "Thanks.", "Actions": [ { "Type": "CompleteQuest", "QuestId": "Fish" } ], "Close": true },
  "AllDone": { "Text": "All done.", "Close": true }
}"#;

/// The one diagnostic on `node` matching `problem`, asserting there is exactly one and it has
/// this severity and file, and that its printed line names both.
pub fn expect_one<'a>(
    diagnostics: &'a [Diagnostic],
    severity: Severity,
    file: &str,
    node: Option<&str>,
    problem: impl Fn(&Problem) -> bool,
) -> &'a Diagnostic {
    let matching: Vec<&Diagnostic> = diagnostics
        .iter()
        .filter(|d| problem(&d.problem) && d.node.as_deref() == node)
        .collect();
    assert_eq!(
        matching.len(),
        1,
        "expected exactly one such diagnostic, got:\n{}",
        render(diagnostics)
    );
    let d = matching[0];
    assert_eq!(d.severity, severity, "{d}");
    assert_eq!(d.file, file, "{d}");
    let line = d.to_string();
    assert!(line.contains(file), "the line names the file: {line}");
    if let Some(node) = node {
        assert!(
            line.contains(&format!("node `{node}`")),
            "the line names the node: {line}"
        );
    }
    d
}

/// Asserts there is no diagnostic other than those `allowed` accepts.
pub fn expect_only(diagnostics: &[Diagnostic], allowed: impl Fn(&Diagnostic) -> bool) {
    let others: Vec<&Diagnostic> = diagnostics.iter().filter(|d| !allowed(d)).collect();
    assert!(
        others.is_empty(),
        "unexpected diagnostics:\n{}",
        render(diagnostics)
    );
}

pub fn render(diagnostics: &[Diagnostic]) -> String {
    diagnostics
        .iter()
        .map(|d| format!("  {d}\n"))
        .collect::<String>()
}

/// The errors `generate` refuses the transcription `files` with (it must refuse them), as
/// printed.
pub fn generate_errors(files: &[(String, Vec<u8>)]) -> Vec<String> {
    banter_dialogue::generate::generate(files)
        .expect_err("refused")
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// Asserts one of `errors` starts with `prefix`.
pub fn expect_error_starting(errors: &[String], prefix: &str) {
    assert!(
        errors.iter().any(|e| e.starts_with(prefix)),
        "no error starts with {prefix:?}: {errors:#?}"
    );
}

/// The repository's sample content folder.
pub fn sample_content() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../content")
}
