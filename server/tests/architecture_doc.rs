//! ARCHITECTURE.md names only what exists: every file or folder it puts in backticks is in the
//! tree, every type it puts in backticks (a `CamelCase` name) is declared somewhere in the
//! workspace's sources, and it carries no benchmark figures (those live in BENCHMARKS.md).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Types of other crates (std, sqlx) the codemap names.
const EXTERNAL_TYPES: [&str; 3] = ["Arc", "Database", "FromRow"];

/// Files a studio adds to its content that the sample content does not have.
const OPTIONAL_FILES: [&str; 1] = ["content/migrations.json"];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every file below `dir` that git would track (no `target`, `node_modules` or dot folders).
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || matches!(name.as_str(), "target" | "node_modules") {
            continue;
        }
        if path.is_dir() {
            out.push(path.clone());
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// The spans of `text` between backticks.
fn code_spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// A code span that names a file or folder: a path with a known ending, or one ending in `/`.
fn as_path(span: &str) -> Option<&str> {
    let span = span.trim_start_matches("./");
    if span.contains("://")
        || span.contains(' ')
        || span.contains('*')
        || span.contains('<')
        || span.contains('{')
    {
        return None;
    }
    let endings = [
        ".rs", ".md", ".json", ".js", ".sql", ".plan", ".po", ".toml", ".sh",
    ];
    (span.ends_with('/') || endings.iter().any(|e| span.ends_with(e))).then_some(span)
}

/// A code span that names a type: one `CamelCase` word (maybe with a `::` path or generics).
fn as_type(span: &str) -> Option<&str> {
    let last = span.rsplit("::").next()?;
    let name = last.split(['<', '(']).next()?;
    let mut chars = name.chars();
    let first = chars.next()?;
    let camel = first.is_ascii_uppercase()
        && name.chars().all(|c| c.is_ascii_alphanumeric())
        && name.chars().any(|c| c.is_ascii_lowercase())
        && name.len() > 2;
    camel.then_some(name)
}

#[test]
fn architecture_md_names_only_files_and_types_that_exist() {
    let root = workspace_root();
    let doc = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let mut tree = Vec::new();
    files(&root, &mut tree);
    let relative: Vec<String> = tree
        .iter()
        .filter_map(|p| p.strip_prefix(&root).ok())
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let sources: String = tree
        .iter()
        .filter(|p| {
            p.extension()
                .is_some_and(|e| e == "rs" || e == "js" || e == "ts")
        })
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect::<Vec<_>>()
        .join("\n");

    let mut missing = BTreeSet::new();
    for span in code_spans(&doc) {
        if let Some(path) = as_path(span) {
            let path = path.trim_end_matches('/');
            // A codemap entry names a file relative to its crate: any file whose path ends so.
            let found = relative
                .iter()
                .any(|r| r == path || r.ends_with(&format!("/{path}")));
            if !found && !OPTIONAL_FILES.contains(&path) {
                missing.insert(format!("file `{span}`"));
            }
        } else if let Some(name) = as_type(span) {
            // A declaration, or an enum's variant on a line of its own.
            let declared = ["struct", "enum", "trait", "type", "class", "mod"]
                .iter()
                .any(|kw| sources.contains(&format!("{kw} {name}")))
                || [",", "(", " {"]
                    .iter()
                    .any(|end| sources.contains(&format!("\n    {name}{end}")))
                || EXTERNAL_TYPES.contains(&name);
            if !declared {
                missing.insert(format!("type `{span}`"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names what the tree does not have:\n  {}",
        missing.into_iter().collect::<Vec<_>>().join("\n  ")
    );
}

#[test]
fn architecture_md_carries_no_benchmark_figures() {
    let doc =
        std::fs::read_to_string(workspace_root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let figures: Vec<&str> = doc
        .lines()
        .filter(|line| {
            [
                "µs",
                " ns ",
                "ops/s",
                "msgs/s",
                "req/s",
                "per second measured",
                "p99 ",
            ]
            .iter()
            .any(|unit| line.contains(unit))
        })
        .collect();
    assert!(
        figures.is_empty(),
        "benchmark figures belong in BENCHMARKS.md:\n{}",
        figures.join("\n")
    );
}
