//! Content migrations: what a content push does to the players stored under the old content,
//! so that renaming or retiring a quest strands nobody.
//!
//! `content/migrations.json` (optional) lists them in order, each with an id that is never
//! reused:
//!
//! ```json
//! [{ "Id": "2026-12-pim-renamed",
//!    "RenameQuests": { "PimsTideTale": "PimsTale" },
//!    "RenameObjectives": { "PimsTale": { "HearTheTale": "Listen" } },
//!    "RemoveQuests": { "OldQuest": "Abandon", "Other": "Complete",
//!                      "Paid": { "Pay": { "Coins": 10, "Experience": 5 } } } }]
//! ```
//!
//! A reload (or a start) applies the migrations the store has not recorded, each in one
//! transaction recorded by its id (so exactly once, whatever instance pushes first), and only
//! once the new content would strand nobody with them applied ([`project`] checks that on what
//! players hold, before the store is touched). Renames move every stored trace (quest states,
//! progress, the ledger, tracked quests); a removed quest still active is abandoned (its state
//! and progress deleted), completed without a reward, or completed and paid once.

use std::path::Path;

use crate::served::ContentVersion;
use crate::store::{ContentMigration, Held, Store, StoreError};

/// The file, in the content folder.
pub const FILE: &str = "migrations.json";

/// The largest migrations file read: the content loader's limit for every content file.
const MAX_BYTES: u64 = banter_dialogue::json::MAX_FILE_BYTES;

/// Reads `content/migrations.json`; none when the file is absent. Every problem names the file
/// and what is wrong.
pub fn load(content: &Path) -> Result<Vec<ContentMigration>, String> {
    let path = content.join(FILE);
    let file = match std::fs::File::open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let mut text = String::new();
    use std::io::Read;
    file.take(MAX_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if text.len() as u64 > MAX_BYTES {
        return Err(format!("{}: larger than {MAX_BYTES} bytes", path.display()));
    }
    let migrations: Vec<ContentMigration> =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut seen = std::collections::BTreeSet::new();
    for migration in &migrations {
        if migration.id.is_empty() || migration.id.len() > crate::store::MAX_ID_LEN {
            return Err(format!(
                "{}: a migration id must be 1 to {} bytes",
                path.display(),
                crate::store::MAX_ID_LEN
            ));
        }
        if !seen.insert(migration.id.as_str()) {
            return Err(format!(
                "{}: migration `{}` is listed twice",
                path.display(),
                migration.id
            ));
        }
    }
    Ok(migrations)
}

/// What players would hold once `migrations` are applied: renamed ids follow their new names,
/// removed quests are no longer held.
pub fn project(held: &Held, migrations: &[&ContentMigration]) -> Held {
    let mut held = held.clone();
    for migration in migrations {
        let quest = |id: &String| migration.rename_quests.get(id).unwrap_or(id).clone();
        let removed = |id: &String| migration.remove_quests.contains_key(id);
        // Quests with a count of players: renamed, and without the removed ones.
        let quests = |counts: &[(String, u64)]| -> Vec<(String, u64)> {
            counts
                .iter()
                .filter(|(id, _)| !removed(id))
                .map(|(id, n)| (quest(id), *n))
                .collect()
        };
        held.active_quests = quests(&held.active_quests);
        held.tracked_quests = quests(&held.tracked_quests);
        held.objectives = held
            .objectives
            .iter()
            .filter(|((id, _), _)| !removed(id))
            .map(|((id, objective), n)| {
                let id = quest(id);
                let objective = migration
                    .rename_objectives
                    .get(&id)
                    .and_then(|renames| renames.get(objective))
                    .unwrap_or(objective)
                    .clone();
                ((id, objective), *n)
            })
            .collect();
    }
    held
}

/// Why content was not admitted. Nothing changed.
#[derive(Debug, thiserror::Error)]
pub enum NotAdmitted {
    /// The content (or its migrations) would strand players, or its migrations file is bad.
    #[error("{0}")]
    Content(String),
    /// The store could not be asked or written.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Admits `next` (loaded from `dir`) against the stored players: its pending migrations,
/// applied in thought to what players hold, must leave nobody stranded; then they are applied
/// to the store, each once. Returns the ids applied now.
pub async fn admit(
    store: &dyn Store,
    dir: &Path,
    next: &ContentVersion,
) -> Result<Vec<String>, NotAdmitted> {
    let migrations = load(dir).map_err(NotAdmitted::Content)?;
    let applied: std::collections::BTreeSet<String> =
        store.applied_migrations().await?.into_iter().collect();
    let pending: Vec<&ContentMigration> = migrations
        .iter()
        .filter(|m| !applied.contains(&m.id))
        .collect();
    let held = project(&store.held(crate::clock::unix_millis()).await?, &pending);
    let stranded = crate::served::stranded(&held, next);
    if !stranded.is_empty() {
        return Err(NotAdmitted::Content(format!(
            "the new content would strand players ({} item(s)): {}; keep them, or add a \
             migration for them in {FILE}",
            stranded.len(),
            stranded.join("; ")
        )));
    }
    let mut done = Vec::new();
    for migration in pending {
        if store
            .apply_migration(migration, crate::clock::unix_millis())
            .await?
        {
            tracing::info!(migration = %migration.id, "content migration applied");
            done.push(migration.id.clone());
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Removal, Reward};

    #[test]
    fn a_migration_file_parses_and_bad_ones_say_what_is_wrong() {
        let dir = std::env::temp_dir().join(format!("banter-migrations-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        assert_eq!(load(&dir), Ok(Vec::new()), "no file, no migration");
        std::fs::write(
            dir.join(FILE),
            r#"[{"Id":"m1","RenameQuests":{"A":"B"},"RemoveQuests":{"C":"Abandon","D":{"Pay":{"Coins":5}}}}]"#,
        )
        .expect("write");
        let loaded = load(&dir).expect("parses");
        assert_eq!(loaded[0].remove_quests["C"], Removal::Abandon);
        assert_eq!(
            loaded[0].remove_quests["D"],
            Removal::Pay(Reward {
                coins: 5,
                experience: 0
            })
        );
        for (text, says) in [
            (r#"[{"Id":"m1"},{"Id":"m1"}]"#, "listed twice"),
            (r#"[{"Id":""}]"#, "migration id"),
            (r#"[{"Id":"m1","Renames":{}}]"#, "unknown field"),
            (
                r#"[{"Id":"m1","RemoveQuests":{"C":"Forget"}}]"#,
                "unknown variant",
            ),
        ] {
            std::fs::write(dir.join(FILE), text).expect("write");
            let error = load(&dir).expect_err(text);
            assert!(error.contains(says) && error.contains(FILE), "{error}");
        }
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn what_players_hold_follows_renames_and_drops_removals() {
        let held = Held {
            active_quests: vec![("Old".into(), 2), ("Gone".into(), 1)],
            objectives: vec![(("Old".into(), "O1".into()), 2)],
            tracked_quests: vec![("Gone".into(), 1)],
            parked: Vec::new(),
        };
        let migration: ContentMigration = serde_json::from_str(
            r#"{"Id":"m","RenameQuests":{"Old":"New"},"RenameObjectives":{"New":{"O1":"O2"}},"RemoveQuests":{"Gone":"Complete"}}"#,
        )
        .expect("parses");
        let after = project(&held, &[&migration]);
        assert_eq!(after.active_quests, [("New".to_owned(), 2)]);
        assert_eq!(after.objectives, [(("New".to_owned(), "O2".to_owned()), 2)]);
        assert!(after.tracked_quests.is_empty());
    }
}
