//! `banter-server analytics` as a writer runs it: on a database with no counts yet, on an
//! unknown conversation, on a bad version; the counts themselves are tested in the session
//! core's and the store's tests.

use std::path::Path;
use std::process::{Command, Output};

fn banter(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_banter-server"))
        .args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .output()
        .expect("run banter-server")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn analytics_answers_tables_json_and_clear_refusals() {
    let db = banter_test_db::TestDb::sqlite("cli-analytics");
    let url = db.url();
    let index = banter(&["analytics", "--database-url", &url]);
    assert_eq!(index.status.code(), Some(0), "{}", text(&index.stderr));
    assert!(text(&index.stdout).contains("conversations (current versions, locale all)"));

    let report = banter(&["analytics", "--database-url", &url, "--conversation", "Pim"]);
    assert_eq!(report.status.code(), Some(0), "{}", text(&report.stderr));
    let out = text(&report.stdout);
    assert!(out.contains("conversation Pim"), "{out}");
    assert!(out.contains("no data for this selection"), "{out}");

    let json = banter(&[
        "analytics",
        "--database-url",
        &url,
        "--conversation",
        "Pim",
        "--json",
    ]);
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(value["conversation"], "Pim");
    assert_eq!(value["opens"], 0);

    let unknown = banter(&[
        "analytics",
        "--database-url",
        &url,
        "--conversation",
        "Nobody",
    ]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(text(&unknown.stderr).contains("no conversation `Nobody`"));

    let bad = banter(&[
        "analytics",
        "--database-url",
        &url,
        "--conversation",
        "Pim",
        "--version",
        "zz",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        text(&bad.stderr).contains("version `zz`"),
        "{}",
        text(&bad.stderr)
    );

    let bad_locale = banter(&["analytics", "--database-url", &url, "--locale", "not a tag"]);
    assert_eq!(bad_locale.status.code(), Some(2));
    assert!(text(&bad_locale.stderr).contains("locale"));
}
