//! Content reloads: `POST /admin/reload`, SIGHUP, the content-folder watcher and the
//! playground's button all come here.
//!
//! - **One at a time, newest wins.** Reloads take a turn ([`ServedContent::reload_turn`], a
//!   fair lock: in the order they asked) for the whole of load, check, admission and swap. Each
//!   one's version is the served version plus one, taken inside its turn, so every answer's
//!   version is unique, and a slow reload that asked first publishes before a quick one that
//!   asked later, never after it.
//! - **Off the runtime, behind the players.** Loading, checking and the shrink guard (seconds
//!   and a gigabyte for a large game) run on the background thread at a low scheduling
//!   priority ([`crate::background`]): a reload never holds a runtime worker nor takes turns
//!   with one, so players' steps and `/healthz` go on. What a reload drops (a refused version,
//!   the one it replaced once nothing holds it) is freed there too.
//! - **No shrunken world by accident.** A reload that would remove more than
//!   `--reload-max-shrink` (50%) of the NPCs or of the conversations is refused, naming what
//!   would go, unless forced (`?force=true`). An empty world is refused by the checks
//!   themselves, forced or not.
//! - **No stranded player.** [`crate::migrations::admit`], as at start.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::api_error::ApiError;
use crate::app::SharedApp;
use crate::served::{ContentErrors, ContentVersion};

/// How a reload was asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReloadOptions {
    /// Swap in content that removes more than the allowed share of NPCs or conversations.
    pub force: bool,
}

/// Most names a refusal lists of what a shrinking reload would remove.
const NAMES_LISTED: usize = 20;

/// Reloads the content folder; shared by the endpoint, SIGHUP and the watcher.
pub async fn reload(app: &SharedApp, options: ReloadOptions) -> Result<u64, ApiError> {
    reload_with(app, options, ContentVersion::load).await
}

/// [`reload`] with the loader given: the server's is [`ContentVersion::load`]; tests pass one
/// that waits, to race reloads on purpose.
pub async fn reload_with<L>(
    app: &SharedApp,
    options: ReloadOptions,
    load: L,
) -> Result<u64, ApiError>
where
    L: FnOnce(&Path, u64) -> Result<ContentVersion, ContentErrors> + Send + 'static,
{
    let refused = |reason: String| {
        app.metrics.reloaded(false);
        tracing::warn!(error = %reason, "content reload refused; the old content stays");
        ApiError::ContentRefused(reason)
    };
    let _turn = app.content.reload_turn().await;
    let current = app.content.current();
    let dir: PathBuf = app.content.dir().to_owned();
    let version = current.version + 1;
    let max_shrink = (!options.force).then_some(app.config.reload_max_shrink);
    let loaded = app
        .content
        .background()
        .run(move || {
            let next = load(&dir, version)?;
            let shrunk = max_shrink.and_then(|max| shrinkage(&current, &next, max));
            Ok::<_, ContentErrors>((next, shrunk))
        })
        .await;
    let next = match loaded {
        Ok(Ok((next, None))) => next,
        Ok(Ok((next, Some(why)))) => {
            app.content.background().drop_later(next);
            return Err(refused(why));
        }
        Ok(Err(errors)) => return Err(refused(errors.to_string())),
        Err(e) => {
            app.metrics.reloaded(false);
            return Err(ApiError::Internal {
                reference: crate::incident::report("content reload", &e),
            });
        }
    };
    // A push must not strand a player: what someone holds (an active or tracked quest, an
    // objective in progress, a parked conversation) must still be in it, once the content's
    // migrations have moved it.
    match crate::migrations::admit(app.store.as_ref(), &app.config.content, &next).await {
        // Migrations moved stored quests under live players: their sessions read them again.
        // (Sessions on other instances read them at their next check or completion.)
        Ok(applied) if !applied.is_empty() => {
            let asked = app.hub.reload_everyone();
            tracing::info!(migrations = ?applied, sessions = asked, "sessions asked to reload their players");
        }
        Ok(_) => {}
        Err(crate::migrations::NotAdmitted::Content(reason)) => {
            app.content.background().drop_later(next);
            return Err(refused(reason));
        }
        Err(crate::migrations::NotAdmitted::Store(e)) => {
            app.content.background().drop_later(next);
            return Err(e.into());
        }
    }
    let version = app.content.publish(next);
    app.metrics.reloaded(true);
    tracing::info!(version, "content reloaded");
    Ok(version)
}

/// Why `next` removes too much of `current` (more than `max_share` of its NPCs or of its
/// conversations), naming what would go; `None` if it does not.
pub fn shrinkage(
    current: &ContentVersion,
    next: &ContentVersion,
    max_share: f64,
) -> Option<String> {
    let gone_npcs: Vec<&str> = current
        .content
        .world
        .npcs
        .iter()
        .map(|n| n.id.as_str())
        .filter(|id| next.npcs.by_id(id).is_none())
        .collect();
    let mut gone_conversations: Vec<&str> = current
        .conversations
        .keys()
        .map(String::as_str)
        .filter(|name| !next.conversations.contains_key(*name))
        .collect();
    gone_conversations.sort_unstable();
    let too_many = |gone: usize, of: usize| of > 0 && (gone as f64) > (of as f64) * max_share;
    let npcs_total = current.content.world.npcs.len();
    let conversations_total = current.conversations.len();
    let mut reasons = Vec::new();
    if too_many(gone_npcs.len(), npcs_total) {
        reasons.push(format!(
            "{} of {npcs_total} NPCs would go ({})",
            gone_npcs.len(),
            listed(&gone_npcs)
        ));
    }
    if too_many(gone_conversations.len(), conversations_total) {
        reasons.push(format!(
            "{} of {conversations_total} conversations would go ({})",
            gone_conversations.len(),
            listed(&gone_conversations)
        ));
    }
    (!reasons.is_empty()).then(|| {
        format!(
            "the new content removes more than {:.0}% of the world: {}; reload with force to do it anyway",
            max_share * 100.0,
            reasons.join("; ")
        )
    })
}

fn listed(names: &[&str]) -> String {
    let mut text = names
        .iter()
        .take(NAMES_LISTED)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > NAMES_LISTED {
        text.push_str(&format!(" and {} more", names.len() - NAMES_LISTED));
    }
    text
}

/// What a folder looks like from outside: every file's path, size and modification time.
/// Equal fingerprints: nothing was written (that the file system shows).
fn fingerprint(dir: &Path) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut entries = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(folder) = pending.pop() {
        let Ok(read) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in read.flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                pending.push(entry.path());
            } else {
                let modified = meta
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
                entries.push((entry.path(), meta.len(), modified));
            }
        }
    }
    entries.sort();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    entries.hash(&mut hasher);
    hasher.finish()
}

/// [`fingerprint`] of `dir`, on a blocking thread.
pub async fn folder_fingerprint(dir: &Path) -> u64 {
    let dir = dir.to_owned();
    tokio::task::spawn_blocking(move || fingerprint(&dir))
        .await
        .unwrap_or(0)
}

/// Watches the content folder (`--watch-content`, for development): after a change from
/// `served` (the folder's [`folder_fingerprint`] when the server took it, before it served
/// anything), once the folder has been quiet for `quiet`, reloads it the way `/admin/reload`
/// does (never forced). A refused reload is logged and waits for the next change. Ends with
/// the server.
pub async fn watch_content(app: SharedApp, quiet: Duration, mut served: u64) {
    let dir = app.content.dir().to_owned();
    let look = || folder_fingerprint(&dir);
    // Polled, not notified: no platform watcher to depend on, and a content folder is small
    // enough to list a few times a second.
    let poll = (quiet / 4).clamp(Duration::from_millis(25), Duration::from_millis(500));
    loop {
        tokio::select! {
            () = tokio::time::sleep(poll) => {}
            () = app.shutdown.cancelled() => return,
        }
        let mut seen = look().await;
        if seen == served {
            continue;
        }
        // Changed: wait until it stays the same for the quiet period (an editor's save, a
        // checkout of many files).
        let mut still_since = tokio::time::Instant::now();
        loop {
            tokio::select! {
                () = tokio::time::sleep(poll) => {}
                () = app.shutdown.cancelled() => return,
            }
            let now = look().await;
            if now != seen {
                seen = now;
                still_since = tokio::time::Instant::now();
            } else if still_since.elapsed() >= quiet {
                break;
            }
        }
        tracing::info!("content folder changed; reloading");
        // Refused or not, this state of the folder has had its reload.
        let _ = reload(&app, ReloadOptions::default()).await;
        served = seen;
    }
}

#[cfg(test)]
mod tests;
