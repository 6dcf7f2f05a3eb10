//! Narrative analytics: what players actually do in each conversation, for writers.
//!
//! Three layers, named by what flows through them:
//! - events ([`tally`]): an open conversation pushes one small event per thing it does (a line
//!   shown, a response chosen, how long a line stayed, a quest offered), by index into its own
//!   graph, with no lock and no allocation beyond the vector;
//! - rollup rows (this file): when the conversation ends its events become counts under
//!   (conversation, its content version, locale, metric, subject, detail) in one in-memory map,
//!   which [`run_flusher`] adds to the store's `narrative_rollups` every second, one transaction
//!   of upserts (both backends);
//! - reports ([`report`]): a query reads the rollup rows of one conversation and the quests it
//!   offers, never the step log, so it costs the same after ten steps or ten million
//!   (BENCHMARKS.md, "Narrative analytics").
//!
//! Counts only: no player id is in a rollup row, so none can leave the analytics endpoint.
//! The rollup is best-effort, like the audit's refusals: a kill -9 loses at most the last second
//! of counts, and a store outage keeps them in memory (up to [`MAX_PENDING_KEYS`] distinct rows,
//! then counted as dropped) until a flush succeeds.

pub mod buckets;
pub mod report;
pub mod tally;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use banter_dialogue::DialogueGraph;
use banter_protocol::Effect;
use tokio_util::sync::CancellationToken;

use crate::served::ContentVersion;
use crate::store::RollupRow;
pub use tally::{ConversationTally, Ending, TallyEvent};

/// A row about one conversation (`name` is the conversation, `version` its source hash).
pub const CONVERSATION: &str = "conversation";
/// A row about one quest (`name` is the quest id, `version` its definition's hash).
pub const QUEST: &str = "quest";

/// The metrics of rollup rows.
pub mod metric {
    /// Conversation: opened on entry line `subject`.
    pub const OPEN: &str = "open";
    /// Conversation: line `subject` shown.
    pub const VISIT: &str = "visit";
    /// Conversation: response `detail` chosen under line `subject`.
    pub const CHOICE: &str = "choice";
    /// Conversation: ended as `subject` (an [`super::Ending`]) at line `detail`.
    pub const END: &str = "end";
    /// Conversation: line `subject` stayed on screen for a time in bucket `detail`.
    pub const LINE_MS: &str = "line_ms";
    /// Conversation: quest `subject` was offered in it.
    pub const OFFER: &str = "offer";
    /// Quest: reached stage `subject` (see [`super::stage`]).
    pub const STAGE: &str = "stage";
}

/// The stages of a quest's funnel.
pub mod stage {
    /// Its `AcceptQuest` came on screen (once per conversation).
    pub const OFFERED: &str = "offered";
    /// Offered in a conversation that ended without accepting it.
    pub const DECLINED: &str = "declined";
    pub const ACCEPTED: &str = "accepted";
    /// `objective:<id>`: the objective reached its target.
    pub const OBJECTIVE_PREFIX: &str = "objective:";
    pub const COMPLETED: &str = "completed";
    /// Accepted, then given up from the quest log (`abandon_quest`).
    pub const ABANDONED: &str = "abandoned";
}

/// Most distinct rows held in memory between flushes; more are dropped and counted.
pub const MAX_PENDING_KEYS: usize = 200_000;
/// How often the rollup is added to the store.
const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// One count's key: every column of a rollup row but the count.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct RollupKey {
    scope: &'static str,
    name: String,
    version: String,
    locale: String,
    metric: &'static str,
    subject: String,
    detail: String,
}

/// The counts waiting for the store, shared by every session.
#[derive(Debug)]
pub struct Analytics {
    enabled: bool,
    pending: Mutex<HashMap<RollupKey, i64>>,
    dropped: AtomicU64,
    written: AtomicU64,
}

impl Analytics {
    pub fn new(enabled: bool) -> Analytics {
        Analytics {
            enabled,
            pending: Mutex::new(HashMap::new()),
            dropped: AtomicU64::new(0),
            written: AtomicU64::new(0),
        }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Counts dropped because the map was full (the store was down for long).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Rollup rows the flusher has written (upserts, not distinct rows).
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<RollupKey, i64>> {
        // A panic elsewhere while holding the lock leaves counts, not a broken invariant.
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn add(&self, pending: &mut HashMap<RollupKey, i64>, key: RollupKey, count: i64) {
        let full = pending.len() >= MAX_PENDING_KEYS;
        match pending.get_mut(&key) {
            Some(n) => *n += count,
            None if full => {
                // The counts lost, not the rows: a row may carry many.
                let lost = u64::try_from(count).unwrap_or(0);
                self.dropped.fetch_add(lost, Ordering::Relaxed);
            }
            None => {
                pending.insert(key, count);
            }
        }
    }

    /// A conversation ended: its `counts` (each distinct event with how often it came, from
    /// [`ConversationTally::end`]) join the rollup. `name` is the conversation, `library` the
    /// content version it walked, `locale` the tag its text was served in.
    pub fn conversation_ended(
        &self,
        library: &ContentVersion,
        name: &str,
        locale: &str,
        graph: &DialogueGraph,
        counts: &[(TallyEvent, i64)],
    ) {
        if !self.enabled {
            return;
        }
        let version = library
            .conversations
            .get(name)
            .map_or("", |p| p.hash.as_str());
        let vertex = |v| graph.vertex(v).map_or("", |v| &*v.name);
        let key = |metric: &'static str, subject: &str, detail: &str| RollupKey {
            scope: CONVERSATION,
            name: name.to_owned(),
            version: version.to_owned(),
            locale: locale.to_owned(),
            metric,
            subject: subject.to_owned(),
            detail: detail.to_owned(),
        };
        // Each distinct event builds its key (five strings) once, with its count: a key per
        // event cost 4,000 instructions a step of a long conversation (BENCHMARKS.md, issue 37).
        let mut offered: HashSet<&str> = HashSet::new();
        let mut accepted: HashSet<&str> = HashSet::new();
        // Keys are built before the lock: every session's conversations end through it.
        let mut rows = Vec::with_capacity(counts.len() + 3);
        for &(event, count) in counts {
            let row = match event {
                TallyEvent::Open(entry) => key(metric::OPEN, vertex(entry), ""),
                TallyEvent::Visit(line) => key(metric::VISIT, vertex(line), ""),
                TallyEvent::Choice { line, response } => {
                    key(metric::CHOICE, line.map_or("", vertex), vertex(response))
                }
                TallyEvent::LineTime { line, bucket } => {
                    key(metric::LINE_MS, vertex(line), &buckets::detail(bucket))
                }
                TallyEvent::Offer(index) => {
                    if let Some(quest) = tally::accepted_quest(graph, index) {
                        offered.insert(quest);
                    }
                    continue;
                }
                TallyEvent::Accept(index) => {
                    if let Some(quest) = tally::accepted_quest(graph, index) {
                        accepted.insert(quest);
                    }
                    continue;
                }
                TallyEvent::End { how, at } => key(metric::END, how.name(), at.map_or("", vertex)),
            };
            rows.push((row, count));
        }
        for quest in &offered {
            rows.push((key(metric::OFFER, quest, ""), 1));
            rows.push((quest_key(library, quest, locale, stage::OFFERED), 1));
            if !accepted.contains(quest) {
                rows.push((quest_key(library, quest, locale, stage::DECLINED), 1));
            }
        }
        let mut pending = self.pending();
        for (row, count) in rows {
            self.add(&mut pending, row, count);
        }
    }

    /// Counts one row.
    fn add_one(&self, key: RollupKey) {
        let mut pending = self.pending();
        self.add(&mut pending, key, 1);
    }

    /// A committed effect: its quest stage, if it is one (accepted, an objective reaching its
    /// target, completed). `locale` is the player's, or `""` where none is known (a game event
    /// for a player who may be offline).
    pub fn effect(&self, library: &ContentVersion, locale: &str, effect: &Effect) {
        if !self.enabled {
            return;
        }
        let (quest, stage) = match effect {
            Effect::QuestAccepted { quest, .. } => (quest, stage::ACCEPTED.to_owned()),
            Effect::QuestCompleted { quest, .. } => (quest, stage::COMPLETED.to_owned()),
            Effect::ObjectiveAdvanced {
                quest,
                objective,
                progress,
                target,
            } if progress >= target => (quest, format!("{}{objective}", stage::OBJECTIVE_PREFIX)),
            _ => return,
        };
        self.add_one(quest_key(library, quest, locale, &stage));
    }

    /// A player gave up an active quest (`abandon_quest`): its funnel's `abandoned` count.
    pub fn abandoned(&self, library: &ContentVersion, quest: &str, locale: &str) {
        if !self.enabled {
            return;
        }
        self.add_one(quest_key(library, quest, locale, stage::ABANDONED));
    }

    /// A cutscene quest was offered and accepted at once (talking to its giver starts the
    /// scene; no conversation puts an offer on screen): its funnel's first stage.
    pub fn cutscene_offered(&self, library: &ContentVersion, quest: &str, locale: &str) {
        if !self.enabled {
            return;
        }
        self.add_one(quest_key(library, quest, locale, stage::OFFERED));
    }

    /// Everything counted since the last take, as rows for the store.
    pub fn take(&self) -> Vec<RollupRow> {
        let taken = std::mem::take(&mut *self.pending());
        taken
            .into_iter()
            .map(|(key, count)| RollupRow {
                scope: key.scope.to_owned(),
                name: key.name,
                version: key.version,
                locale: key.locale,
                metric: key.metric.to_owned(),
                subject: key.subject,
                detail: key.detail,
                count,
            })
            .collect()
    }

    /// Rows a flush could not write, counted again for the next one.
    pub fn put_back(&self, rows: Vec<RollupRow>) {
        let mut pending = self.pending();
        for row in rows {
            let (Some(scope), Some(metric)) = (scope_name(&row.scope), metric_name(&row.metric))
            else {
                continue;
            };
            let key = RollupKey {
                scope,
                name: row.name,
                version: row.version,
                locale: row.locale,
                metric,
                subject: row.subject,
                detail: row.detail,
            };
            self.add(&mut pending, key, row.count);
        }
    }

    /// Adds what is pending to the store; on failure it stays pending. True if all was written.
    pub async fn flush(&self, store: &dyn crate::store::Store) -> bool {
        let rows = self.take();
        if rows.is_empty() {
            return true;
        }
        match store.add_rollups(&rows).await {
            Ok(()) => {
                self.written.fetch_add(rows.len() as u64, Ordering::Relaxed);
                true
            }
            Err(e) => {
                tracing::warn!(error = %e, rows = rows.len(), "cannot write narrative rollups; keeping them for the next flush");
                self.put_back(rows);
                false
            }
        }
    }
}

fn quest_key(library: &ContentVersion, quest: &str, locale: &str, stage: &str) -> RollupKey {
    RollupKey {
        scope: QUEST,
        name: quest.to_owned(),
        version: library.quest_version(quest).to_owned(),
        locale: locale.to_owned(),
        metric: metric::STAGE,
        subject: stage.to_owned(),
        detail: String::new(),
    }
}

fn scope_name(scope: &str) -> Option<&'static str> {
    [CONVERSATION, QUEST].into_iter().find(|s| *s == scope)
}

fn metric_name(name: &str) -> Option<&'static str> {
    [
        metric::OPEN,
        metric::VISIT,
        metric::CHOICE,
        metric::END,
        metric::LINE_MS,
        metric::OFFER,
        metric::STAGE,
    ]
    .into_iter()
    .find(|m| *m == name)
}

/// Adds what `analytics` holds to `store` every [`FLUSH_EVERY`] until `stop`, then once more.
pub async fn run_flusher(
    analytics: Arc<Analytics>,
    store: Arc<dyn crate::store::Store>,
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(FLUSH_EVERY) => {}
            () = stop.cancelled() => break,
        }
        analytics.flush(store.as_ref()).await;
    }
    analytics.flush(store.as_ref()).await;
}

/// What to report: the query of `GET /admin/analytics` and `banter-server analytics`.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnalyticsQuery {
    /// One conversation's report; without it, every conversation's opens and endings.
    pub conversation: Option<String>,
    /// A content version (a conversation's hash), or `all`; by default the one served now.
    pub version: Option<String>,
    /// Only conversations read in this locale (the tag served, the source language's
    /// included); by default every locale.
    pub locale: Option<String>,
}

/// Why a query cannot be answered.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error("bad query: {0}")]
    Bad(String),
    #[error("no conversation `{0}` in the content and no analytics for it")]
    UnknownConversation(String),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

/// The answer to an [`AnalyticsQuery`].
#[derive(Clone, Debug, serde::Serialize)]
#[serde(untagged)]
pub enum Answer {
    Conversation(Box<report::ConversationReport>),
    Index(Index),
}

/// Every conversation with data.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Index {
    /// `current` (each conversation's version served now) or `all`.
    pub version: String,
    pub locale: Option<String>,
    pub conversations: Vec<report::ConversationSummary>,
}

/// Answers a query from the store's rollups; `library` is the content served now (or the
/// content folder the CLI read), which says what the current versions are.
pub async fn answer(
    store: &dyn crate::store::Store,
    library: Option<&ContentVersion>,
    query: &AnalyticsQuery,
) -> Result<Answer, QueryError> {
    let all = query.version.as_deref() == Some("all");
    if let Some(version) = query.version.as_deref().filter(|v| *v != "all") {
        let hex = version.len() == 32 && version.bytes().all(|b| b.is_ascii_hexdigit());
        if !hex {
            return Err(QueryError::Bad(format!(
                "version `{}` is neither `all` nor a content hash (32 hex digits)",
                crate::audit::truncate(version, 64)
            )));
        }
    }
    if let Some(locale) = query.locale.as_deref() {
        banter_dialogue::locale::Locale::parse(locale)
            .map_err(|e| QueryError::Bad(format!("locale: {e}")))?;
    }
    let Some(conversation) = query.conversation.as_deref() else {
        let versions = match (all, library) {
            (false, Some(library)) => library
                .conversations
                .iter()
                .map(|(name, p)| (name.clone(), p.hash.clone()))
                .collect(),
            _ => Default::default(),
        };
        let rows = store.rollup_index().await?;
        return Ok(Answer::Index(Index {
            version: if all { "all" } else { "current" }.to_owned(),
            locale: query.locale.clone(),
            conversations: report::summaries(&rows, &versions, query.locale.as_deref()),
        }));
    };
    crate::store::check_id("conversation", conversation)
        .map_err(|e| QueryError::Bad(e.to_string()))?;
    let served = library.and_then(|l| l.conversations.get(conversation));
    let version = match (&query.version, served) {
        (Some(v), _) if v == "all" => None,
        (Some(v), _) => Some(v.clone()),
        (None, Some(published)) => Some(published.hash.clone()),
        (None, None) => None,
    };
    let mut rows = store.rollups(CONVERSATION, conversation).await?;
    if rows.is_empty() && served.is_none() {
        return Err(QueryError::UnknownConversation(conversation.to_owned()));
    }
    let offered: std::collections::BTreeSet<String> = rows
        .iter()
        .filter(|r| r.metric == metric::OFFER)
        .map(|r| r.subject.clone())
        .collect();
    for quest in &offered {
        rows.extend(store.rollups(QUEST, quest).await?);
    }
    let quest_versions = match (all, library) {
        (false, Some(library)) => library
            .quest_versions
            .iter()
            .filter(|(id, _)| offered.contains(*id))
            .map(|(id, v)| (id.clone(), v.clone()))
            .collect(),
        _ => Default::default(),
    };
    let selection = report::Selection {
        version,
        locale: query.locale.clone(),
        quest_versions,
    };
    Ok(Answer::Conversation(Box::new(report::conversation(
        conversation,
        &rows,
        &selection,
    ))))
}
