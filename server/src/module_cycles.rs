//! No import circle in `server/src` (ARCHITECTURE.md, "Invariants"), checked: the crate's
//! module graph, one node per top-level module, has no cycle.
//!
//! An edge `a -> b` is a path `crate::b` (or `crate::{b, ..}`) named in top-level module `a`'s
//! code; the crate root (`lib.rs`, node `lib`) names modules by their bare names, and a path to
//! one of its items (`crate::run`) is an edge to it. Test-only code draws no edge: files under a
//! `tests` folder, `tests.rs`, `testing.rs`, a module declared `#[cfg(test)] mod x;` and an item
//! after `#[cfg(test)]` (the `mod tests { .. }` blocks). Neither do comments and string literals,
//! so prose may name any module.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

/// The crate root's node.
const ROOT: &str = "lib";

/// One edge and the first place it is named (`store/mod.rs:12`).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Edge {
    from: String,
    to: String,
    at: String,
}

/// A shortest cycle of the graph `edges` draw, as the nodes walked (the first again at the end),
/// or `None` if it has none. Of cycles equally short, the one through the first node in name
/// order.
fn find_cycle(edges: &[(&str, &str)]) -> Option<Vec<String>> {
    let mut next: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for &(from, to) in edges {
        next.entry(from).or_default().insert(to);
        next.entry(to).or_default();
    }
    let mut shortest: Option<Vec<&str>> = None;
    for &start in next.keys() {
        // Breadth first from `start` until an edge leads back to it.
        let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = VecDeque::from([start]);
        'search: while let Some(node) = queue.pop_front() {
            for &to in &next[node] {
                if to == start {
                    let mut back = vec![start];
                    let mut at = node;
                    while at != start {
                        back.push(at);
                        at = came_from[at];
                    }
                    back.push(start);
                    back.reverse();
                    if shortest.as_ref().is_none_or(|s| back.len() < s.len()) {
                        shortest = Some(back);
                    }
                    break 'search;
                }
                if !came_from.contains_key(to) {
                    came_from.insert(to, node);
                    queue.push_back(to);
                }
            }
        }
    }
    shortest.map(|cycle| cycle.into_iter().map(str::to_owned).collect())
}

/// `source` with comments and the contents of string and character literals blanked out
/// (newlines kept, so line numbers stay).
fn code_only(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let starts_word = |at: usize| at == 0 || !is_ident(chars[at - 1]);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let at = |k: usize| chars.get(i + k).copied();
        if c == '/' && at(1) == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && at(1) == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if c == 'r'
            && matches!(at(1), Some('"' | '#'))
            && (starts_word(i) || (chars[i - 1] == 'b' && starts_word(i - 1)))
        {
            // A raw string: r"..." or r#"..."# (or br"..."), with as many hashes to close it.
            let mut hashes = 0;
            while at(1 + hashes) == Some('#') {
                hashes += 1;
            }
            if at(1 + hashes) != Some('"') {
                out.push(c);
                i += 1;
                continue;
            }
            out.push('r');
            i += 2 + hashes;
            out.extend(std::iter::repeat_n(' ', hashes + 1));
            while i < chars.len() {
                let closes =
                    chars[i] == '"' && (0..hashes).all(|h| chars.get(i + 1 + h) == Some(&'#'));
                if closes {
                    out.extend(std::iter::repeat_n(' ', hashes + 1));
                    i += 1 + hashes;
                    break;
                }
                out.push(blank(chars[i]));
                i += 1;
            }
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < chars.len() {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' && (at(1) == Some('\\') || at(2) == Some('\'')) {
            // A character literal ('"', '\'', '\u{..}'); a lifetime has no closing quote.
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                out.push(' ');
                i += 1;
            }
            out.push(' ');
            i += 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `code` (from [`code_only`]) with every item after a `#[cfg(test)]` attribute blanked out
/// (all of it after `#![cfg(test)]`), and the names of the modules declared there
/// (`#[cfg(test)] mod testing;`), whose files are test-only.
fn without_test_items(code: &str) -> (String, Vec<String>) {
    const ATTRIBUTE: &[u8] = b"#[cfg(test)]";
    if code.contains("#![cfg(test)]") {
        return (blanked(code.as_bytes()), Vec::new());
    }
    let mut out = code.as_bytes().to_vec();
    let mut test_modules = Vec::new();
    let mut from = 0;
    while let Some(found) = out[from..]
        .windows(ATTRIBUTE.len())
        .position(|w| w == ATTRIBUTE)
    {
        let start = from + found;
        let mut i = start + ATTRIBUTE.len();
        // The item's other attributes, then `mod name;` or anything else.
        let mut item = String::from_utf8_lossy(&out[i..]).into_owned();
        while item.trim_start().starts_with("#[") {
            let close = item.find(']').map_or(item.len(), |at| at + 1);
            item.drain(..close);
        }
        let item = item.trim_start();
        let declared = ["mod ", "pub mod ", "pub(crate) mod "]
            .iter()
            .find_map(|prefix| item.strip_prefix(prefix));
        if let Some(rest) = declared {
            let rest = rest.trim_start();
            let name: String = rest.chars().take_while(|&c| is_ident(c)).collect();
            if rest[name.len()..].trim_start().starts_with(';') {
                test_modules.push(name);
            }
        }
        // The item ends at its first `;` (or `,`, for a field or an arm) outside brackets, after
        // its first `{ .. }` block, or before the end of the block it is in. Generics' `<..>`
        // count as brackets for the `,`.
        let (mut brackets, mut angles, mut braces) = (0i32, 0i32, 0i32);
        while i < out.len() {
            let c = out[i];
            let arrow = i > 0 && matches!(out[i - 1], b'-' | b'=');
            match c {
                b'(' | b'[' => brackets += 1,
                b')' | b']' if brackets == 0 => break,
                b')' | b']' => brackets -= 1,
                b'<' => angles += 1,
                b'>' if angles > 0 && !arrow => angles -= 1,
                b'{' => braces += 1,
                b'}' if braces == 0 => break,
                b'}' => {
                    braces -= 1;
                    if braces == 0 {
                        i += 1;
                        break;
                    }
                }
                b';' if brackets == 0 && braces == 0 => {
                    i += 1;
                    break;
                }
                b',' if brackets == 0 && angles == 0 && braces == 0 => {
                    i += 1;
                    break;
                }
                _ => {}
            }
            i += 1;
        }
        for c in &mut out[start..i] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
        from = i;
    }
    // Only whole characters were blanked (every byte of them), so this is UTF-8 still.
    (String::from_utf8_lossy(&out).into_owned(), test_modules)
}

/// `bytes` with everything but newlines made a space.
fn blanked(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|&c| if c == b'\n' { '\n' } else { ' ' })
        .collect()
}

/// The modules `code` names, with the line of each naming: `crate::x`, `crate::{x, y::Z}`, and
/// in the crate root also `x::` alone. A name that is not one of `modules` is an item of the
/// crate root, [`ROOT`].
fn named(code: &str, modules: &BTreeSet<String>, in_root: bool) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    let (mut line, mut counted) = (1, 0);
    let mut from = 0;
    while let Some(at) = next_path(&code[from..]).map(|at| at + from) {
        line += code[counted..at].matches('\n').count();
        counted = at;
        let path = &code[at..];
        let starts_a_path = code[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !is_ident(c) && c != '$' && c != ':');
        if starts_a_path {
            if let Some(after) = path.strip_prefix("crate::") {
                if let Some(group) = after.strip_prefix('{') {
                    for name in group_names(group) {
                        found.push((node(&name, modules), line));
                    }
                } else {
                    let name: String = after.chars().take_while(|&c| is_ident(c)).collect();
                    if !name.is_empty() {
                        found.push((node(&name, modules), line));
                    }
                }
            } else if in_root {
                let name: String = path.chars().take_while(|&c| is_ident(c)).collect();
                if modules.contains(&name) {
                    found.push((name, line));
                }
            }
        }
        from = at + path.find("::").map_or(1, |p| p + 2);
    }
    found
}

/// Where in `text` the next path that may name a module starts: an identifier followed by `::`.
fn next_path(text: &str) -> Option<usize> {
    let mut from = 0;
    loop {
        let colons = from + text[from..].find("::")?;
        let start = text[..colons]
            .char_indices()
            .rev()
            .take_while(|&(_, c)| is_ident(c))
            .last()
            .map(|(i, _)| i);
        match start {
            Some(start) => return Some(start),
            // `::` after no identifier (`<T>::`, `::std`): look further.
            None => from = colons + 2,
        }
    }
}

/// The first names of the items of a `use crate::{..}` group, from its text after the `{`.
fn group_names(after_brace: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut depth = 0;
    let mut segment = String::new();
    for c in after_brace.chars() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                names.push(std::mem::take(&mut segment));
                continue;
            }
            _ => {}
        }
        if depth == 0 {
            segment.push(c);
        }
    }
    names.push(segment);
    names
        .iter()
        .map(|s| {
            s.trim_start()
                .chars()
                .take_while(|&c| is_ident(c))
                .collect::<String>()
        })
        .filter(|name| !name.is_empty() && name != "self")
        .collect()
}

/// The node `crate::name` points at: the module, or the crate root for one of its items.
fn node(name: &str, modules: &BTreeSet<String>) -> String {
    if modules.contains(name) {
        name.to_owned()
    } else {
        ROOT.to_owned()
    }
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

/// The module a file of `src` belongs to, as the path of names under the crate root
/// (`store/queries.rs` → `[store, queries]`, `lib.rs` → `[]`).
fn module_path(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs").to_owned();
        if stem != "mod" && stem != "lib" {
            parts.push(stem);
        }
    }
    parts
}

/// Every edge of the crate in `src`, with the first place each is named, and how many files
/// were read.
fn crate_edges(src: &Path) -> (Vec<Edge>, usize) {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let relative = |file: &Path| file.strip_prefix(src).unwrap_or(file).to_path_buf();
    let modules: BTreeSet<String> = files
        .iter()
        .filter_map(|f| module_path(&relative(f)).first().cloned())
        .filter(|m| m != "main")
        .collect();
    // First every file's code, to learn which modules are declared test-only.
    let mut code = BTreeMap::new();
    let mut test_only: BTreeSet<Vec<String>> = BTreeSet::new();
    for file in &files {
        let path = module_path(&relative(file));
        let source = std::fs::read_to_string(file).expect("a source file");
        let (kept, test_modules) = without_test_items(&code_only(&source));
        for name in test_modules {
            let mut child = path.clone();
            child.push(name);
            test_only.insert(child);
        }
        code.insert(file.clone(), (path, kept));
    }
    let mut edges: BTreeMap<(String, String), String> = BTreeMap::new();
    let mut read = 0;
    for (file, (path, kept)) in &code {
        let rel = relative(file);
        let name = rel.to_string_lossy().replace('\\', "/");
        let skipped = name == "main.rs"
            || path.iter().any(|p| p == "tests" || p == "testing")
            || (1..=path.len()).any(|n| test_only.contains(&path[..n]));
        if skipped {
            continue;
        }
        read += 1;
        let from = path.first().cloned().unwrap_or_else(|| ROOT.to_owned());
        for (to, line) in named(kept, &modules, path.is_empty()) {
            if to != from {
                edges
                    .entry((from.clone(), to))
                    .or_insert_with(|| format!("{name}:{line}"));
            }
        }
    }
    let edges = edges
        .into_iter()
        .map(|((from, to), at)| Edge { from, to, at })
        .collect();
    (edges, read)
}

/// The failure message for `cycle`: the circle, and where each of its edges is named.
fn describe(cycle: &[String], edges: &[Edge]) -> String {
    let mut text = format!("import circle in server/src: {}", cycle.join(" -> "));
    for pair in cycle.windows(2) {
        if let Some(edge) = edges.iter().find(|e| e.from == pair[0] && e.to == pair[1]) {
            text.push_str(&format!(
                "\n  {} -> {}: server/src/{}",
                edge.from, edge.to, edge.at
            ));
        }
    }
    text
}

#[test]
fn no_import_circle_in_server_src() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (edges, read) = crate_edges(&src);
    assert!(read > 40, "only {read} files read");
    let named = |from: &str, to: &str| edges.iter().any(|e| e.from == from && e.to == to);
    assert!(
        named("http", "store") && named("lib", "app") && named("cli", ROOT),
        "the scan finds the edges it should: {edges:#?}"
    );
    let pairs: Vec<(&str, &str)> = edges
        .iter()
        .map(|e| (e.from.as_str(), e.to.as_str()))
        .collect();
    if let Some(cycle) = find_cycle(&pairs) {
        panic!("{}", describe(&cycle, &edges));
    }
}

#[test]
fn a_planted_cycle_is_found_and_written_out() {
    let acyclic = [
        ("http", "app"),
        ("app", "store"),
        ("http", "store"),
        ("reload", "app"),
    ];
    assert_eq!(find_cycle(&acyclic), None);
    let planted = [
        ("http", "app"),
        ("app", "store"),
        ("reload", "app"),
        ("store", "http"),
    ];
    let cycle = find_cycle(&planted).expect("the planted cycle");
    assert_eq!(cycle, ["app", "store", "http", "app"]);
    let edges: Vec<Edge> = planted
        .iter()
        .map(|&(from, to)| Edge {
            from: from.into(),
            to: to.into(),
            at: format!("{from}.rs:1"),
        })
        .collect();
    assert_eq!(
        describe(&cycle, &edges),
        "import circle in server/src: app -> store -> http -> app\
         \n  app -> store: server/src/app.rs:1\
         \n  store -> http: server/src/store.rs:1\
         \n  http -> app: server/src/http.rs:1"
    );
    assert_eq!(
        find_cycle(&[("a", "a")]),
        Some(vec!["a".into(), "a".into()])
    );
    let two_circles = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "b")];
    assert_eq!(
        find_cycle(&two_circles),
        Some(vec!["b".into(), "c".into(), "b".into()]),
        "the shorter"
    );
}

#[test]
fn only_code_outside_tests_draws_edges() {
    let modules: BTreeSet<String> = ["http", "app", "store", "audit", "hidden", "testing"]
        .map(String::from)
        .into();
    let source = r##"
//! Prose may say crate::hidden.
use crate::http;
use crate::{app::App, store::{self, Store}};
/* crate::hidden */ const TEXT: &str = "crate::hidden"; const RAW: &str = r#"crate::hidden"#;
const QUOTE: char = '"'; fn f<'a>(x: &'a str) -> &'a str { crate::audit::truncate(x, 1) }
pub(crate) fn g() { $crate::hidden::x(); my_crate::hidden::y(); crate::run(); }
#[cfg(test)]
mod testing;
struct S { #[cfg(test)] hidden: crate::hidden::H, kept: crate::audit::A }
#[cfg(test)]
#[allow(unused)]
mod tests {
    use crate::hidden;
}
fn after() { crate::store::x(); }
#[cfg(test)]
impl<A, B> T for crate::hidden::X<A, B> { fn f() -> crate::hidden::Y<A> { crate::hidden::Y::new() } }
"##;
    let (code, test_modules) = without_test_items(&code_only(source));
    assert_eq!(test_modules, ["testing"]);
    let found = named(&code, &modules, false);
    assert_eq!(
        found,
        [
            ("http".to_owned(), 3),
            ("app".to_owned(), 4),
            ("store".to_owned(), 4),
            ("audit".to_owned(), 6),
            (ROOT.to_owned(), 7),
            ("audit".to_owned(), 10),
            ("store".to_owned(), 16),
        ]
    );
    // The crate root names its modules without `crate::`.
    let root =
        code_only("pub mod store;\nfn run() { store::connect(); tokio::spawn(http::serve()); }");
    assert_eq!(
        named(&root, &modules, true),
        [("store".to_owned(), 2), ("http".to_owned(), 2)]
    );
}
