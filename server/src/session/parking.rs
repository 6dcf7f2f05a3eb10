//! Parking and resume: a conversation left open when the connection drops is parked in the
//! store (any instance can take it back, once) and in the local parking lot (`resume.rs`, which
//! keeps the content version it opened with); `resume` takes it back if the world allows.
//!
//! The wall-clock time (the parked window, read alike by every instance) comes in with
//! [`Now`]; nothing here reads the wall clock. What still waits here, on tokio timers (not moved
//! out to the caller): `resume` waits up to [`RESUME_PATIENCE`] for an older session of the
//! player on this instance to park (`ParkingLot::take`, woken when it does) and then, on a
//! shared PostgreSQL store when nothing was parked here, looks in the store again every
//! [`RESUME_POLL`] (a `tokio::time::sleep`), for up to another [`RESUME_PATIENCE`], for a
//! conversation another instance is still parking. The Unix milliseconds of each store look are
//! `Now::unix_ms` plus the time the resume has waited, measured with a `tokio::time::Instant`.

use std::sync::Arc;
use std::time::Duration;

use banter_dialogue::{ActionIndex, Walk};
use banter_player::DialogueState;
use banter_protocol::ServerMessage;

use super::core::{Audited, Now, OpenConversation, SessionCore};
use super::refusal::{Refusal, SessionError};
use super::store::SessionStore;
use crate::analytics::{ConversationTally, Ending};
use crate::served::ContentVersion;

/// How long a `resume` waits for an older session of the player to wind down and park.
const RESUME_PATIENCE: Duration = Duration::from_secs(2);
/// Between two looks in the store for a conversation another instance is parking.
const RESUME_POLL: Duration = Duration::from_millis(50);

/// What the store keeps of a parked conversation: enough to take it back on any instance that
/// serves the same content.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ParkedConversation {
    name: String,
    /// The NPC's instance id.
    npc: String,
    /// The conversation's published hash when it opened: it is taken back only on that version.
    hash: String,
    walk: banter_dialogue::WalkSnapshot,
    uid: String,
    spent: Vec<(u32, u32)>,
    /// The end of its window, in milliseconds since the Unix epoch.
    until_ms: i64,
}

impl SessionCore {
    /// Parks the open conversation for a `resume` within the grace window (the session ended
    /// without the client choosing to): its walk in the store, where any instance can take it
    /// back exactly once, and the content version it opened with in this process, so a resume
    /// here keeps that version even after a reload.
    /// `now` is when the connection was found gone: the window runs from there.
    pub async fn park(&mut self, now: Now) {
        // A shared conversation is never parked (PROTOCOL.md section 17.4): the player leaves it.
        if self
            .conversation
            .as_ref()
            .is_some_and(|c| c.shared.is_some())
        {
            self.leave_shared(banter_protocol::LeftReason::Dropped, now.mono);
        }
        let Some(mut conversation) = self.conversation.take() else {
            return;
        };
        // Its line was on screen until the last message the player sent, not until the
        // connection was found dead.
        conversation.tally_end(&self.app.analytics, Ending::Disconnected, self.last_seen);
        let window = self.app.config.limits.resume_window;
        let token = self.resume_token();
        let now_ms = now.unix_ms;
        let until_ms = now_ms.saturating_add(i64::try_from(window.as_millis()).unwrap_or(i64::MAX));
        if self
            .park_in_store(&conversation, &token, until_ms, now_ms)
            .await
        {
            self.app.parked.park(
                &self.player,
                token,
                now.mono + window,
                now.mono,
                conversation.library.clone(),
            );
        }
    }

    /// Writes a parked conversation to the store; false (logged) if it could not be.
    async fn park_in_store(
        &self,
        conversation: &OpenConversation,
        token: &str,
        until_ms: i64,
        now_ms: i64,
    ) -> bool {
        let parked = ParkedConversation {
            name: conversation.name.clone(),
            npc: conversation.npc.id.clone(),
            hash: conversation
                .library
                .conversations
                .get(&conversation.name)
                .map(|p| p.hash.clone())
                .unwrap_or_default(),
            walk: conversation.walk.snapshot(),
            uid: conversation.uid.clone(),
            spent: conversation.spent.iter().map(|(i, n)| (i.0, *n)).collect(),
            until_ms,
        };
        let stored = match serde_json::to_string(&parked) {
            Ok(json) => {
                self.store()
                    .park_conversation(&self.player, token, until_ms, now_ms, &json)
                    .await
            }
            Err(e) => Err(crate::store::StoreError::InvalidInput(e.to_string())),
        };
        match stored {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(player = %self.player, error = %e, "cannot park the conversation; a resume will be refused");
                false
            }
        }
    }

    /// Takes back the conversation a dropped session of this player parked under `token`, if
    /// the player can talk to its NPC now. Out of reach, the conversation stays parked for the
    /// rest of its window: the player may walk back and resume.
    pub(super) async fn on_resume(&mut self, token: &str, now: Now) -> Result<Audited, Refusal> {
        if self.conversation.is_some() {
            return Err(SessionError::ConversationOpen.into());
        }
        self.check_free()?;
        let app = self.app.clone();
        // The resume's waits are timed from here (see `take_parked`).
        let waiting = tokio::time::Instant::now();
        // An older session of this player on this instance may be about to park: wait for it
        // (briefly). What it kept here is the content version the conversation opened with.
        let local = app
            .parked
            .take(&self.player, token, || now.mono, RESUME_PATIENCE)
            .await;
        let (json, now_ms) = self
            .take_parked(token, local.is_some(), now.unix_ms, waiting)
            .await?;
        let parked: ParkedConversation =
            serde_json::from_str(&json).map_err(|_| SessionError::ResumeRefused)?;
        let conversation = self.rebuild(parked.clone(), local.map(|(library, _)| library))?;
        if let Err(far) = self.reach_now(&conversation.npc) {
            // Out of reach: parked again for the rest of its window.
            if self
                .park_in_store(&conversation, token, parked.until_ms, now_ms)
                .await
            {
                let left = Duration::from_millis(
                    u64::try_from(parked.until_ms.saturating_sub(now_ms)).unwrap_or(0),
                );
                app.parked.park(
                    &self.player,
                    token.to_owned(),
                    now.mono + left,
                    now.mono,
                    conversation.library.clone(),
                );
            }
            return Err(far.into());
        }
        self.may_have_parked = false;
        // The hash of the text the client cached for it: the player's locale's.
        let hash = conversation
            .library
            .conversations
            .get(&conversation.name)
            .map(|p| p.for_locale(self.locale.as_ref()).1.to_owned())
            .unwrap_or_default();
        self.dialogue
            .enter(&mut self.machine, DialogueState::Talking);
        self.out.push(ServerMessage::Resumed {
            conversation: conversation.name.clone(),
            hash,
        });
        self.conversation = Some(conversation);
        Ok(Audited::Trail)
    }

    /// The parked conversation's JSON from the store, taken (so exactly once, on any instance).
    /// Another instance may still be parking it (the reconnect reached this one first): on a
    /// database that several instances share, ask again for up to [`RESUME_PATIENCE`]. A SQLite
    /// file serves one instance, and `parked_here` says whether this one parked it.
    ///
    /// `unix_ms` is the wall-clock time the message came in with, and `waiting` when the resume
    /// started waiting: each look asks the store at `unix_ms` plus how long the resume has waited
    /// (measured on the wait's own tokio timer, the one its deadline runs on; the wall clock is
    /// not read), and the time of the look that answered comes back with the JSON.
    async fn take_parked(
        &self,
        token: &str,
        parked_here: bool,
        unix_ms: i64,
        waiting: tokio::time::Instant,
    ) -> Result<(String, i64), Refusal> {
        let shared = self.store().backend() == "postgres";
        let deadline = tokio::time::Instant::now() + RESUME_PATIENCE;
        loop {
            let waited = i64::try_from(waiting.elapsed().as_millis()).unwrap_or(i64::MAX);
            let now_ms = unix_ms.saturating_add(waited);
            match self.store().take_parked(&self.player, token, now_ms).await {
                Ok(Some(json)) => return Ok((json, now_ms)),
                Ok(None) if shared && !parked_here && tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(RESUME_POLL).await;
                }
                Ok(None) => return Err(SessionError::ResumeRefused.into()),
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// An open conversation from what was parked: on the content version it opened with if this
    /// process still has it, else on the version served now if that is the same conversation
    /// (same hash: another instance on the same content). Anything else is refused, never a walk
    /// on a graph it was not taken on.
    fn rebuild(
        &self,
        parked: ParkedConversation,
        kept_here: Option<Arc<ContentVersion>>,
    ) -> Result<OpenConversation, SessionError> {
        let hash_matches = |library: &Arc<ContentVersion>| {
            library
                .conversations
                .get(&parked.name)
                .is_some_and(|p| p.hash == parked.hash)
        };
        let library = kept_here
            .filter(hash_matches)
            .or_else(|| Some(self.app.content.current()).filter(hash_matches))
            .ok_or(SessionError::ResumeRefused)?;
        let published = library
            .conversations
            .get(&parked.name)
            .ok_or(SessionError::ResumeRefused)?;
        let graph = published.graph.clone();
        let npc = library
            .npcs
            .by_id(&parked.npc)
            .cloned()
            .ok_or(SessionError::ResumeRefused)?;
        let walk = Walk::restore(&graph, &parked.walk).map_err(|_| SessionError::ResumeRefused)?;
        Ok(OpenConversation {
            name: parked.name,
            npc,
            library,
            graph,
            walk,
            uid: parked.uid,
            spent: parked
                .spent
                .into_iter()
                .map(|(i, n)| (ActionIndex(i), n))
                .collect(),
            tally: ConversationTally::resumed(),
            locale: self.served_locale(),
            // A shared conversation is never parked.
            shared: None,
        })
    }
}
