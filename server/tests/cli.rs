//! The `banter-server` binary as a writer and CI run it: exit codes and output lines.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use banter_test_db::temp::{TempDir, copy_dir};

mod binary_support;

use binary_support::{banter, stderr};

fn sample_content() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../content")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A copy of the sample content in a unique temp folder, removed when dropped.
struct Copy(TempDir);

impl Copy {
    fn of_sample(tag: &str) -> Copy {
        Copy(TempDir::copy_of(&sample_content(), &format!("cli-{tag}")))
    }

    fn edit(&self, relative: &str, from: &str, to: &str) {
        let path = self.0.path().join(relative);
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(text.contains(from), "{relative} contains {from:?}");
        std::fs::write(&path, text.replacen(from, to, 1)).expect("write");
    }

    fn path(&self) -> &str {
        self.0.path().to_str().expect("temp paths are UTF-8 here")
    }
}

#[test]
fn check_content_on_the_sample_exits_0() {
    let out = banter(&["check-content", "../content"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert_eq!(stdout(&out).lines().last(), Some("0 errors, 0 warnings"));
}

#[test]
fn a_broken_nextnode_exits_1_and_names_file_and_node() {
    let copy = Copy::of_sample("broken");
    copy.edit(
        "dialogue/base/Marisol.json",
        r#""NextNode": "Marisol_Bye""#,
        r#""NextNode": "Marisol_Gone""#,
    );
    let out = banter(&["check-content", copy.path()]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stdout(&out);
    let line = text
        .lines()
        .find(|l| l.starts_with("error:"))
        .unwrap_or_else(|| panic!("an error line in:\n{text}"));
    assert!(line.contains("dialogue/base/Marisol.json"), "{line}");
    assert!(line.contains("node `Marisol_Hello`"), "{line}");
    assert!(line.contains("field `Responses[4].NextNode`"), "{line}");
    assert!(line.contains("Marisol_Gone"), "{line}");
    assert_eq!(text.lines().last(), Some("1 error, 0 warnings"), "{text}");
}

#[test]
fn a_bad_migrations_file_exits_1_and_names_it() {
    let copy = Copy::of_sample("migrations");
    std::fs::write(
        Path::new(copy.path()).join("migrations.json"),
        r#"[{"Id":"m1","RemoveQuests":{"PimsTideTale":"Forget"}}]"#,
    )
    .expect("write");
    let out = banter(&["check-content", copy.path()]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(
        text.lines().any(|l| l.starts_with("error:")
            && l.contains("migrations.json")
            && l.contains("Forget")),
        "{text}"
    );
    assert_eq!(text.lines().last(), Some("1 error, 0 warnings"), "{text}");
}

#[test]
fn warnings_alone_exit_0() {
    let copy = Copy::of_sample("warnings");
    copy.edit("dialogue/base/Pim.json", r#""Speaker": "Pim","#, "");
    let out = banter(&["check-content", copy.path()]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(text.starts_with("warning: "), "{text}");
    assert!(
        text.contains("Pim.json: field `Speaker`: the conversation has no Speaker"),
        "{text}"
    );
    assert_eq!(text.lines().last(), Some("0 errors, 1 warning"));
}

#[test]
fn export_prints_a_dot_graph() {
    let out = banter(&[
        "export",
        "Fennick",
        "--content",
        "../content",
        "--format",
        "dot",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let dot = stdout(&out);
    assert!(dot.starts_with("digraph \"Fennick\" {"), "{dot}");
    assert!(dot.trim_end().ends_with('}'));
    assert!(dot.contains(" -> "));
    assert!(dot.contains("CopperSnappers_Check"));
}

#[test]
fn export_takes_an_npc_id_and_mermaid() {
    let out = banter(&[
        "export",
        "skipper_gullrock",
        "--content",
        "../content",
        "--format",
        "mermaid",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("flowchart TD"));
    assert!(stdout(&out).contains("Skipper_Hello"));
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        vec![],
        vec!["check-content"],
        vec!["check-content", "/no/such/folder"],
        vec!["export", "Nobody", "--content", "../content"],
        vec![
            "export",
            "Fennick",
            "--content",
            "../content",
            "--format",
            "png",
        ],
    ] {
        let out = banter(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).is_empty(), "{args:?} says why");
    }
}

#[test]
fn test_content_runs_the_sample_plans_and_a_wrong_line_fails_with_file_and_line() {
    let ok = banter(&["test-content", sample_content().to_str().expect("utf-8")]);
    assert_eq!(ok.status.code(), Some(0), "{}{}", stdout(&ok), stderr(&ok));
    assert!(stdout(&ok).contains(" 0 failed"), "{}", stdout(&ok));

    let copy = Copy::of_sample("plan-fault");
    copy.edit(
        "tests/pim.plan",
        "expect line PimsTideTale_Ending",
        "expect line PimsTideTale_Complete",
    );
    let failed = banter(&["test-content", copy.path()]);
    assert_eq!(failed.status.code(), Some(1), "{}", stdout(&failed));
    let out = stdout(&failed);
    let line = std::fs::read_to_string(copy.0.path().join("tests/pim.plan"))
        .expect("plan")
        .lines()
        .position(|l| l.contains("expect line PimsTideTale_Complete"))
        .expect("the planted line")
        + 1;
    assert!(
        out.contains(&format!("pim.plan:{line}:")) && out.contains("PimsTideTale_Ending"),
        "{out}"
    );
    // check-content runs the plans too, so CI fails on a failing plan.
    let checked = banter(&["check-content", copy.path()]);
    assert_eq!(checked.status.code(), Some(1), "{}", stdout(&checked));
}

#[test]
fn explore_reaches_every_line_of_the_sample_and_reports_planted_faults() {
    // The sample reaches every line with no finding; the planted faults are found.
    let sample = banter(&[
        "test-content",
        "--explore",
        sample_content().to_str().expect("utf-8"),
    ]);
    let before = stdout(&sample);
    assert_eq!(sample.status.code(), Some(0), "{before}");
    assert!(before.contains("(100%), 0 finding(s)"), "{before}");
    assert!(!before.contains("Pim_Orphan"), "{before}");

    let copy = Copy::of_sample("explore-fault");
    // A node nothing leads to, and a quest whose payout no line arms.
    copy.edit(
        "dialogue/base/Pim.json",
        "\"Pim_Bye\": {",
        "\"Pim_Orphan\": { \"LineId\": \"line:orphan0001\", \"Text\": \"Nobody ever hears this.\", \"Close\": true },\n  \"Pim_Bye\": {",
    );
    copy.edit(
        "dialogue/base/Pim.json",
        "\"Actions\": [ { \"Type\": \"CompleteQuest\", \"QuestId\": \"PimsTideTale\" } ],",
        "",
    );
    let found = banter(&["test-content", "--explore", copy.path()]);
    let out = stdout(&found);
    assert_eq!(found.status.code(), Some(1), "{out}");
    assert!(out.contains("node `Pim_Orphan` is never reached"), "{out}");
    assert!(
        out.contains("quest `PimsTideTale` can never be completed"),
        "{out}"
    );
}

#[test]
fn check_content_against_an_old_version_names_what_players_would_lose() {
    let old = Copy::of_sample("against-old");
    let new = Copy::of_sample("against-new");
    new.edit(
        "dialogue/base/Pim.json",
        "\"Pim_Ines\": {",
        "\"Pim_InesSaysHi\": {",
    );
    new.edit(
        "dialogue/base/Pim.json",
        "\"NextNode\": \"Pim_Ines\"",
        "\"NextNode\": \"Pim_InesSaysHi\"",
    );
    let checked = banter(&["check-content", new.path(), "--against", old.path()]);
    let out = stdout(&checked);
    assert!(
        out.contains("node `Pim_Ines` is renamed `Pim_InesSaysHi` (same line id)"),
        "{out}"
    );
}

/// The `banter-server` arguments of every README example (`cargo run [--release] -p
/// banter-server -- ARGS`), in order, each cut at its comment, pipe or redirection.
fn readme_examples(readme: &str) -> Vec<Vec<String>> {
    const MARK: &str = "-p banter-server -- ";
    readme
        .lines()
        .filter(|line| line.trim_start().starts_with("cargo run"))
        .filter_map(|line| line.split_once(MARK).map(|(_, args)| args))
        .map(|args| {
            let end = args.find(['#', '|', '>', '&']).unwrap_or(args.len());
            args[..end].split_whitespace().map(str::to_owned).collect()
        })
        .collect()
}

/// The locales the README's `banter-sim` examples play in (`--locale X`).
fn readme_sim_locales(readme: &str) -> Vec<String> {
    readme
        .lines()
        .filter(|line| line.contains("-p banter-sim --"))
        .filter_map(|line| line.split_once("--locale "))
        .filter_map(|(_, rest)| rest.split_whitespace().next().map(str::to_owned))
        .collect()
}

/// Issue 22: the README's examples name only what exists. Every `banter-server` command of
/// the README that works on content runs, as written, in a copy of the workspace's `content/`
/// and `content-src/` (some write: `strings tag`, `strings export`, `gen-content`), and must
/// succeed; `serve` and the database commands are left to their own tests, but a conversation
/// they name must exist. `old-content`, the version players are on for `--against`, is a second
/// copy of the sample.
#[test]
fn the_readme_examples_run_against_the_sample_content() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(repo.join("README.md")).expect("README.md");
    let examples = readme_examples(&readme);
    let workspace = std::env::temp_dir().join(format!("banter-readme-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&workspace);
    copy_dir(&sample_content(), &workspace.join("content"));
    copy_dir(&repo.join("content-src"), &workspace.join("content-src"));
    copy_dir(&sample_content(), &workspace.join("old-content"));
    let mut ran = Vec::new();
    for args in &examples {
        let Some(command) = args.first() else {
            continue;
        };
        if ["serve", "migrate", "analytics"].contains(&command.as_str()) {
            // Not run (they need a database or run until stopped), but a conversation they
            // name must exist.
            if let Some(at) = args.iter().position(|a| a == "--conversation") {
                let name = args.get(at + 1).map_or("", String::as_str);
                let base = sample_content().join(format!("dialogue/base/{name}.json"));
                assert!(
                    base.is_file(),
                    "README example `banter-server {}` names conversation `{name}`, which the \
                     sample does not have",
                    args.join(" ")
                );
            }
            continue;
        }
        let out = Command::new(env!("CARGO_BIN_EXE_banter-server"))
            .args(args)
            .current_dir(&workspace)
            .output()
            .expect("run banter-server");
        assert_eq!(
            out.status.code(),
            Some(0),
            "README example `banter-server {}` failed:\n{}{}",
            args.join(" "),
            stdout(&out),
            stderr(&out)
        );
        ran.push(args.join(" "));
    }
    let _ = std::fs::remove_dir_all(&workspace);
    for needed in [
        "check-content",
        "export",
        "test-content",
        "strings tag",
        "strings export",
        "gen-content",
    ] {
        assert!(
            ran.iter().any(|r| r.starts_with(needed)),
            "the README shows `{needed}` (ran: {ran:#?})"
        );
    }
    // The simulator needs a server; its examples' locales must exist in the sample.
    for locale in readme_sim_locales(&readme) {
        let table = sample_content().join(format!("locales/{locale}.po"));
        assert!(
            locale == "en-XA" || table.is_file(),
            "the README plays in `{locale}`, which the sample does not translate"
        );
    }
}
