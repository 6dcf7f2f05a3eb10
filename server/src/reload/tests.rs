//! Reloads raced on purpose, and the shrink guard, on a real SQLite store and the sample
//! content.

use std::path::{Path, PathBuf};

use super::{ReloadOptions, reload, reload_with, shrinkage};
use crate::app::SharedApp;
use crate::served::ContentVersion;
use crate::testing::{app_on, sample_content, sample_copy};
use crate::world::NpcRegistry;

/// The sample content with Pim renamed: a version a test can tell apart.
fn content_with_pim_named(name: &str) -> PathBuf {
    let dir = sample_copy("reload");
    let world = dir.join("world.json");
    let text = std::fs::read_to_string(&world).expect("world.json");
    let renamed = text.replacen("\"Name\": \"Pim\"", &format!("\"Name\": \"{name}\""), 1);
    assert_ne!(text, renamed, "Pim's name is in world.json");
    std::fs::write(&world, renamed).expect("write world.json");
    dir
}

fn pims_name(app: &SharedApp) -> String {
    app.content
        .current()
        .npcs
        .by_id("pim")
        .map(|n| n.name.clone())
        .expect("pim")
}

#[tokio::test]
async fn reloads_at_once_each_answer_a_version_of_their_own_and_the_last_is_served() {
    let (app, _db) = app_on("reload", sample_content()).await;
    let reloads: Vec<_> = (0..5)
        .map(|_| {
            let app = app.clone();
            tokio::spawn(async move { reload(&app, ReloadOptions::default()).await })
        })
        .collect();
    let mut versions = Vec::new();
    for reload in reloads {
        versions.push(reload.await.expect("joined").expect("reloaded"));
    }
    versions.sort_unstable();
    assert_eq!(versions, [2, 3, 4, 5, 6], "unique, one more each");
    assert_eq!(
        app.content.current().version,
        6,
        "the served version is the last answered"
    );
}

/// A slow reload asked first, a quick one asked while it loads: without turns the quick one
/// would publish first and the slow one would then replace newer content with older. Here the
/// slow one publishes first, and the content served at the end is the newer one.
#[tokio::test(flavor = "current_thread")]
async fn a_slow_older_reload_never_replaces_a_newer_one() {
    let (app, _db) = app_on("reload", sample_content()).await;
    let older = content_with_pim_named("Pim the Older");
    let newer = content_with_pim_named("Pim the Newer");
    let (started_tx, started) = tokio::sync::oneshot::channel::<()>();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let slow = {
        let app = app.clone();
        tokio::spawn(async move {
            reload_with(&app, ReloadOptions::default(), move |_, version| {
                let _ = started_tx.send(());
                // Loading takes as long as the test says.
                let _ = released.recv();
                ContentVersion::load(&older, version)
            })
            .await
        })
    };
    started.await.expect("the slow reload is loading");
    let quick = {
        let app = app.clone();
        tokio::spawn(async move {
            reload_with(&app, ReloadOptions::default(), move |_, version| {
                ContentVersion::load(&newer, version)
            })
            .await
        })
    };
    // On this one thread, the quick reload runs until it waits for its turn.
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
    assert!(
        !quick.is_finished(),
        "the quick reload waits for the slow one"
    );
    release.send(()).expect("release");
    let slow_version = slow.await.expect("joined").expect("reloaded");
    let quick_version = quick.await.expect("joined").expect("reloaded");
    assert_eq!((slow_version, quick_version), (2, 3));
    assert_eq!(app.content.current().version, 3);
    assert_eq!(pims_name(&app), "Pim the Newer");
}

fn sample() -> ContentVersion {
    ContentVersion::load(&sample_content(), 1).expect("sample")
}

#[test]
fn a_reload_that_removes_most_of_the_world_is_named_and_a_small_one_passes() {
    let current = sample();
    let mut halved = sample();
    let total = halved.content.world.npcs.len();
    halved.content.world.npcs.truncate(2);
    halved.npcs = NpcRegistry::from_content(&halved.content);
    let why = shrinkage(&current, &halved, 0.5).expect("refused");
    assert!(
        why.contains(&format!("{} of {total} NPCs would go", total - 2)),
        "{why}"
    );
    let gone = &current.content.world.npcs[2].id;
    assert!(why.contains(gone.as_str()), "names what would go: {why}");
    assert!(why.contains("force"), "says how to do it anyway: {why}");
    // Losing one NPC, or none, is an ordinary push.
    let mut one_less = sample();
    one_less.content.world.npcs.pop();
    one_less.npcs = NpcRegistry::from_content(&one_less.content);
    assert_eq!(shrinkage(&current, &one_less, 0.5), None);
    assert_eq!(shrinkage(&current, &sample(), 0.5), None);
    // Conversations count on their own.
    let mut fewer_conversations = sample();
    let names: Vec<String> = fewer_conversations.conversations.keys().cloned().collect();
    for name in names.iter().skip(1) {
        fewer_conversations.conversations.remove(name);
    }
    let why = shrinkage(&current, &fewer_conversations, 0.5).expect("refused");
    assert!(why.contains("conversations would go"), "{why}");
    // 1.0 allows anything; 0.0 refuses any loss.
    assert_eq!(shrinkage(&current, &halved, 1.0), None);
    assert!(shrinkage(&current, &one_less, 0.0).is_some());
}

#[tokio::test]
async fn a_shrinking_reload_is_refused_unless_forced_and_changes_nothing() {
    let (app, _db) = app_on("reload", sample_content()).await;
    let sample_npcs = app.content.current().content.world.npcs.len();
    let shrunk = move |_: &Path, version: u64| {
        let mut next = ContentVersion::load(&sample_content(), version)?;
        next.content.world.npcs.truncate(1);
        next.npcs = NpcRegistry::from_content(&next.content);
        Ok(next)
    };
    let refused = reload_with(&app, ReloadOptions::default(), shrunk).await;
    match refused {
        Err(crate::api_error::ApiError::ContentRefused(why)) => {
            assert!(why.contains("NPCs would go"), "{why}");
        }
        other => panic!("expected a refusal, got {:?}", other.map(|_| ())),
    }
    assert_eq!(app.content.current().version, 1, "nothing changed");
    assert_eq!(app.content.current().content.world.npcs.len(), sample_npcs);
    let forced = reload_with(&app, ReloadOptions { force: true }, shrunk)
        .await
        .expect("forced");
    assert_eq!(forced, 2);
    assert_eq!(app.content.current().content.world.npcs.len(), 1);
}
