//! `banter-server gen-content`: the committed generated content is exactly what the committed
//! transcriptions produce, regeneration leaves the layers alone, and bad input exits 1 (2 for
//! usage) with the file and field named.

use std::path::{Path, PathBuf};
use std::process::Output;

use banter_dialogue::generate;
use banter_test_db::temp::TempDir;

mod binary_support;

use binary_support::{banter, stderr};

/// `gen-content` from the transcriptions in `input` into `output`.
fn gen_content(input: &Path, output: &Path) -> Output {
    banter(&[
        "gen-content",
        input.to_str().expect("utf-8"),
        "--out",
        output.to_str().expect("utf-8"),
    ])
}

/// The committed transcriptions generated into `output`, successfully.
fn generate_sample(output: &Path) -> Output {
    let out = gen_content(&transcriptions(), output);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    out
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn transcriptions() -> PathBuf {
    repo().join("content-src/transcriptions")
}

fn files_under(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir)
        .expect("read dir")
        .filter_map(Result::ok)
    {
        let path = entry.path();
        if path.is_dir() {
            files_under(root, &path, out);
        } else {
            out.push(path.strip_prefix(root).expect("under root").to_owned());
        }
    }
}

#[test]
fn regenerating_the_sample_reproduces_the_committed_files_byte_for_byte() {
    let temp = TempDir::new("gen-equal");
    generate_sample(temp.path());
    let mut generated = Vec::new();
    files_under(temp.path(), temp.path(), &mut generated);
    generated.sort();
    assert!(
        generated.len() >= 12,
        "four conversations, NPC shards and quest shards: {generated:?}"
    );
    let content = repo().join("content");
    let mut shards_not_committed = Vec::new();
    for relative in &generated {
        let fresh = std::fs::read(temp.path().join(relative)).expect("generated");
        let Ok(committed) = std::fs::read(content.join(relative)) else {
            shards_not_committed.push(relative.clone());
            continue;
        };
        assert!(
            fresh == committed,
            "content/{} differs from what gen-content writes; rerun \
             `banter-server gen-content content-src/transcriptions --out content`",
            relative.display()
        );
    }
    // Content generated before the shards holds the older single files instead: until it is
    // regenerated (which replaces them with the shards), the shards must say what they say.
    for (legacy, dir, key) in [
        (
            generate::LEGACY_WORLD_FILE,
            generate::WORLD_DIR,
            Some("Npcs"),
        ),
        (generate::LEGACY_QUESTS_FILE, generate::QUESTS_DIR, None),
    ] {
        let shards: Vec<&PathBuf> = shards_not_committed
            .iter()
            .filter(|p| p.starts_with(dir))
            .collect();
        if shards.is_empty() {
            assert!(
                !content.join(legacy).exists(),
                "content/{legacy} beside content/{dir}/: delete it"
            );
            continue;
        }
        let committed = std::fs::read(content.join(legacy)).unwrap_or_else(|e| {
            panic!("content/{dir}/ lacks {shards:?}, and content/{legacy} cannot be read: {e}")
        });
        let entries = |value: serde_json::Value| -> Vec<serde_json::Value> {
            let list = match key {
                Some(key) => value.get(key).cloned().unwrap_or_default(),
                None => value,
            };
            let mut list = list.as_array().cloned().unwrap_or_default();
            list.sort_by_key(|e| e.get("Id").map(ToString::to_string));
            list
        };
        let old = entries(serde_json::from_slice(&committed).expect("committed JSON"));
        let mut new = Vec::new();
        for shard in shards {
            let text = std::fs::read(temp.path().join(shard)).expect("shard");
            new.extend(entries(serde_json::from_slice(&text).expect("shard JSON")));
        }
        new.sort_by_key(|e| e.get("Id").map(ToString::to_string));
        assert_eq!(
            new, old,
            "the shards of {dir}/ differ from content/{legacy}; rerun \
             `banter-server gen-content content-src/transcriptions --out content`"
        );
    }
    shards_not_committed
        .retain(|p| !p.starts_with(generate::WORLD_DIR) && !p.starts_with(generate::QUESTS_DIR));
    assert!(
        shards_not_committed.is_empty(),
        "generated but not committed: {shards_not_committed:?}"
    );
}

#[test]
fn regenerating_writes_shards_and_removes_the_older_single_files_and_stale_shards() {
    let temp = TempDir::new("gen-migrate");
    for legacy in [generate::LEGACY_WORLD_FILE, generate::LEGACY_QUESTS_FILE] {
        std::fs::write(temp.path().join(legacy), "old").expect("write");
    }
    // A shard for an NPC no longer transcribed, and a hand-made file beside the shard folders.
    let stale = temp.path().join(generate::WORLD_DIR).join("gone.json");
    std::fs::create_dir_all(stale.parent().expect("parent")).expect("mkdir");
    std::fs::write(&stale, "{}").expect("write");
    std::fs::write(
        temp.path().join(generate::WORLD_DIR).join("notes.txt"),
        "mine",
    )
    .expect("write");
    let out = generate_sample(temp.path());
    let printed = String::from_utf8_lossy(&out.stdout).into_owned();
    for legacy in [generate::LEGACY_WORLD_FILE, generate::LEGACY_QUESTS_FILE] {
        assert!(!temp.path().join(legacy).exists(), "{legacy} is removed");
        assert!(printed.contains(&format!("removed {legacy}")), "{printed}");
    }
    assert!(!stale.exists(), "the stale shard is removed: {printed}");
    assert!(
        temp.path()
            .join(generate::WORLD_DIR)
            .join("notes.txt")
            .exists()
    );
    assert!(
        temp.path()
            .join(generate::WORLD_DIR)
            .join("hattie.json")
            .exists()
    );
    assert!(
        temp.path()
            .join(generate::QUESTS_DIR)
            .join("hattie.json")
            .exists()
    );
    assert!(printed.contains("3 removed"), "{printed}");
}

#[test]
fn regenerating_never_touches_the_layers_or_hand_written_files() {
    let temp = TempDir::new("gen-layers");
    let layer = temp.path().join("dialogue/side/Hattie.json");
    std::fs::create_dir_all(layer.parent().expect("parent")).expect("mkdir");
    std::fs::write(&layer, "layer").expect("write");
    std::fs::write(temp.path().join("world.json"), "hand").expect("write");
    std::fs::write(temp.path().join("quests.json"), "hand").expect("write");
    for _ in 0..2 {
        generate_sample(temp.path());
    }
    assert_eq!(std::fs::read_to_string(&layer).expect("read"), "layer");
    assert_eq!(
        std::fs::read_to_string(temp.path().join("world.json")).expect("read"),
        "hand"
    );
    assert_eq!(
        std::fs::read_to_string(temp.path().join("quests.json")).expect("read"),
        "hand"
    );
}

#[test]
fn a_bad_transcription_exits_1_naming_file_and_field_and_writes_nothing() {
    let input = TempDir::new("gen-bad-in");
    let output = TempDir::new("gen-bad-out");
    let good = std::fs::read_to_string(transcriptions().join("hattie.json")).expect("hattie");
    std::fs::write(input.path().join("hattie.json"), &good).expect("write");
    let bad = good.replace("\"Target\": 3", "\"Target\": 0");
    assert_ne!(bad, good);
    std::fs::write(input.path().join("zz_bad.json"), bad).expect("write");
    let out = gen_content(input.path(), output.path());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("zz_bad.json: Quests[0].Objectives[0].Target: must be at least 1"),
        "{err}"
    );
    assert!(err.contains("zz_bad.json: Npc.Id: NPC `hattie`"), "{err}");
    assert!(err.contains("nothing written"), "{err}");
    let mut written = Vec::new();
    files_under(output.path(), output.path(), &mut written);
    assert!(written.is_empty(), "{written:?}");
}

#[test]
fn a_missing_folder_or_argument_is_a_usage_error() {
    let out = banter(&["gen-content", "/no/such/folder", "--out", "/tmp"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("not a folder of transcriptions"));
    let out = banter(&["gen-content", transcriptions().to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2), "--out is required");
    let empty = TempDir::new("gen-empty");
    let out = banter(&[
        "gen-content",
        empty.path().to_str().expect("utf-8"),
        "--out",
        "/tmp",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no `*.json` transcriptions"));
}
