//! The workspace's architecture invariants (ARCHITECTURE.md), checked rather than only written:
//!
//! - the pure crates depend on no async runtime, database or HTTP stack, directly or through any
//!   dependency (`cargo metadata`'s resolved graph, dev-dependencies left out);
//! - the pure crates' sources read no clock, no global random source and no file, except the one
//!   content reader (`dialogue/src/content.rs`): time and randomness are inputs, and files are
//!   read by the caller.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The pure crates, by package name and folder.
const PURE: [(&str, &str); 5] = [
    ("banter-protocol", "protocol"),
    ("banter-dialogue", "dialogue"),
    ("banter-player", "player"),
    ("banter-barks", "barks"),
    ("banter-rules", "rules"),
];

/// Packages a pure crate must not reach: the runtime, the database, the HTTP stack (and their
/// own `-` crates, such as `tokio-util` or `sqlx-core`).
const FORBIDDEN: [&str; 4] = ["tokio", "sqlx", "axum", "hyper"];

/// What a pure crate's source must not say: clocks, global randomness, the file system.
const IMPURE: [(&str, &str); 13] = [
    ("SystemTime::now", "reads the clock"),
    ("Instant::now", "reads the clock"),
    ("thread_rng", "uses a global random source"),
    ("rand::random", "uses a global random source"),
    ("RandomState", "uses a global random source"),
    ("getrandom", "uses a global random source"),
    ("std::fs", "uses the file system"),
    ("fs::read", "reads a file"),
    ("fs::write", "writes a file"),
    ("File::open", "opens a file"),
    ("File::create", "creates a file"),
    ("OpenOptions", "opens a file"),
    ("read_dir", "lists a folder"),
];

/// The one file of a pure crate allowed to read files: the content reader.
const CONTENT_READER: &str = "dialogue/src/content.rs";

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn forbidden(name: &str) -> bool {
    FORBIDDEN.iter().any(|f| {
        name == *f
            || name
                .strip_prefix(f)
                .is_some_and(|rest| rest.starts_with('-'))
    })
}

/// Package id -> (name, ids of its non-dev dependencies).
type Graph = BTreeMap<String, (String, Vec<String>)>;

/// `cargo metadata`'s resolved graph, and the workspace members as (name, id).
fn resolved_graph() -> (Graph, Vec<(String, String)>) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(&cargo)
        .args(["metadata", "--format-version", "1"])
        .current_dir(workspace_root())
        .output()
        .unwrap_or_else(|e| panic!("running {cargo} metadata: {e}"));
    assert!(
        output.status.success(),
        "cargo metadata failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: Value = serde_json::from_slice(&output.stdout).expect("cargo metadata's JSON");
    let names: BTreeMap<&str, &str> = metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter_map(|p| Some((p["id"].as_str()?, p["name"].as_str()?)))
        .collect();
    let mut graph = BTreeMap::new();
    for node in metadata["resolve"]["nodes"].as_array().expect("resolve") {
        let id = node["id"].as_str().expect("node id");
        let deps = node["deps"]
            .as_array()
            .expect("deps")
            .iter()
            .filter(|dep| {
                // A dependency edge may carry several kinds; it counts unless it is dev only.
                dep["dep_kinds"]
                    .as_array()
                    .is_some_and(|kinds| kinds.iter().any(|k| k["kind"].as_str() != Some("dev")))
            })
            .filter_map(|dep| dep["pkg"].as_str().map(str::to_owned))
            .collect();
        let name = names.get(id).copied().unwrap_or(id).to_owned();
        graph.insert(id.to_owned(), (name, deps));
    }
    let members = metadata["workspace_members"]
        .as_array()
        .expect("workspace_members")
        .iter()
        .filter_map(|id| {
            let id = id.as_str()?;
            Some((names.get(id)?.to_string(), id.to_owned()))
        })
        .collect();
    (graph, members)
}

#[test]
fn pure_crates_depend_on_no_runtime_database_or_http_stack() {
    let (graph, members) = resolved_graph();
    let mut found = Vec::new();
    for (pure, _) in PURE {
        let (_, root) = members
            .iter()
            .find(|(name, _)| name == pure)
            .unwrap_or_else(|| panic!("{pure} is not a workspace member"));
        // Breadth first, remembering the way in so a failure names the path.
        let mut via: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = vec![root.as_str()];
        let mut seen = BTreeSet::from([root.as_str()]);
        while let Some(id) = queue.pop() {
            let Some((name, deps)) = graph.get(id) else {
                continue;
            };
            if forbidden(name) {
                let mut path = vec![name.clone()];
                let mut at = id;
                while let Some(parent) = via.get(at) {
                    path.push(graph[*parent].0.clone());
                    at = parent;
                }
                path.reverse();
                found.push(path.join(" -> "));
                continue;
            }
            for dep in deps {
                if seen.insert(dep) {
                    via.insert(dep, id);
                    queue.push(dep);
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "pure crates must not depend on {FORBIDDEN:?}:\n{}",
        found.join("\n")
    );
}

/// The source without `//` comments (line and doc comments), so prose may name what code may not
/// do. Crude about `//` inside string literals, which only ever hides text.
fn code_of(source: &str) -> String {
    source
        .lines()
        .map(|line| line.find("//").map_or(line, |at| &line[..at]))
        .collect::<Vec<_>>()
        .join("\n")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn pure_crates_read_no_clock_random_source_or_file_outside_the_content_reader() {
    let root = workspace_root();
    let mut found = Vec::new();
    let mut scanned = 0;
    for (_, folder) in PURE {
        let mut files = Vec::new();
        rust_files(&root.join(folder).join("src"), &mut files);
        for file in files {
            let relative = file
                .strip_prefix(&root)
                .unwrap_or(&file)
                .to_string_lossy()
                .replace('\\', "/");
            if relative == CONTENT_READER {
                continue;
            }
            scanned += 1;
            let source = std::fs::read_to_string(&file).expect("a source file");
            for (number, line) in code_of(&source).lines().enumerate() {
                for (needle, what) in IMPURE {
                    if line.contains(needle) {
                        found.push(format!(
                            "{relative}:{}: {what} (`{needle}`): {}",
                            number + 1,
                            line.trim()
                        ));
                    }
                }
            }
        }
    }
    assert!(scanned > 20, "only {scanned} files scanned");
    assert!(
        found.is_empty(),
        "pure crates take time, randomness and file contents as inputs:\n{}",
        found.join("\n")
    );
}

#[test]
fn only_the_clock_module_reads_the_wall_clock_in_the_server() {
    let root = workspace_root();
    let mut files = Vec::new();
    rust_files(&root.join("server/src"), &mut files);
    let mut found = Vec::new();
    for file in &files {
        let relative = file
            .strip_prefix(&root)
            .unwrap_or(file)
            .to_string_lossy()
            .replace('\\', "/");
        if relative == "server/src/clock.rs" {
            continue;
        }
        let source = std::fs::read_to_string(file).expect("a source file");
        for (number, line) in code_of(&source).lines().enumerate() {
            if line.contains("SystemTime::now") {
                found.push(format!("{relative}:{}: {}", number + 1, line.trim()));
            }
        }
    }
    assert!(files.len() > 40, "only {} files scanned", files.len());
    assert!(
        found.is_empty(),
        "the wall clock is read in server/src/clock.rs only:\n{}",
        found.join("\n")
    );
}
