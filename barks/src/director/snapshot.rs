//! The director's state by line id, for save games and hot reloads:
//! [`BarkDirector::snapshot`] writes it, [`BarkDirector::restore`] rebuilds a
//! director from it against a catalog that may have changed since.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use banter_player::Effective;
use serde::{Deserialize, Serialize};

use super::{BarkDirector, QuietSet, Speaking};
use crate::catalog::{BarkCatalog, LineId};
use crate::cue::Cue;
use crate::deck::{Deck, DeckState};

impl BarkDirector {
    /// The director's state by line id, for save games and hot reloads.
    /// Pending commands are not part of it: poll them first.
    pub fn snapshot(&self) -> DirectorSnapshot {
        let id = |l: LineId| self.catalog.line(l).id.clone();
        DirectorSnapshot {
            version: DirectorSnapshot::VERSION,
            started: self.started,
            player_switch: self.switch_on,
            holds: self.holds,
            effective: self.effective,
            dwell_since: self.dwell_since,
            last_bark: self.last_bark,
            speaking: self.speaking.map(|s| SpeakingSnapshot {
                line: id(s.line),
                since: s.since,
                expires: s.expires,
            }),
            last_played: self
                .last_played
                .iter()
                .enumerate()
                .filter_map(|(i, t)| Some((self.catalog.lines()[i].id.clone(), (*t)?)))
                .collect(),
            decks: Cue::ALL
                .iter()
                .filter(|c| !self.decks[c.index()].is_empty())
                .map(|&c| {
                    let s = self.decks[c.index()].state();
                    (
                        c,
                        DeckState {
                            order: s.order.into_iter().map(id).collect(),
                            pos: s.pos,
                            last: s.last.map(id),
                            shuffles: s.shuffles,
                        },
                    )
                })
                .collect(),
        }
    }

    /// Rebuild a director from a snapshot, against `catalog`.
    ///
    /// Lines are matched by id, so a catalog edited since the snapshot still
    /// restores: stamps of removed lines are dropped, and a pool whose lines
    /// changed starts a fresh deck (remembering its last line if it is still
    /// there, so the seam still holds).
    pub fn restore(
        catalog: impl Into<Arc<BarkCatalog>>,
        snapshot: &DirectorSnapshot,
    ) -> Result<Self, RestoreError> {
        if snapshot.version != DirectorSnapshot::VERSION {
            return Err(RestoreError::UnsupportedVersion(snapshot.version));
        }
        let mut d = BarkDirector::new(catalog);
        let cat = Arc::clone(&d.catalog);
        d.started = snapshot.started;
        d.switch_on = snapshot.player_switch;
        d.holds = snapshot.holds;
        d.effective = snapshot.effective;
        d.dwell_since = snapshot.dwell_since;
        d.last_bark = snapshot.last_bark;
        d.speaking = snapshot.speaking.as_ref().and_then(|s| {
            let line = cat.find(&s.line)?;
            Some(Speaking {
                line,
                priority: cat.line(line).priority,
                since: s.since,
                expires: s.expires,
            })
        });
        for (id, t) in &snapshot.last_played {
            if let Some(l) = cat.find(id) {
                d.last_played[l.index()] = Some(*t);
            }
        }
        for (cue, s) in &snapshot.decks {
            let pool = cat.pool(*cue);
            let order: Option<Vec<LineId>> = s.order.iter().map(|id| cat.find(id)).collect();
            let last = s.last.as_ref().and_then(|id| cat.find(id));
            let restored = order.and_then(|order| {
                Deck::from_state(
                    pool,
                    DeckState {
                        order,
                        pos: s.pos,
                        last,
                        shuffles: s.shuffles,
                    },
                )
            });
            d.decks[cue.index()] = restored.unwrap_or_else(|| {
                let mut fresh = Deck::new(pool.to_vec());
                if let Some(l) = last.filter(|l| pool.contains(l)) {
                    fresh = Deck::from_state(
                        pool,
                        DeckState {
                            last: Some(l),
                            ..fresh.state()
                        },
                    )
                    .unwrap_or(fresh);
                }
                fresh
            });
        }
        Ok(d)
    }
}

/// A line holding the speaking lock, in a snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpeakingSnapshot {
    /// The line's id.
    pub line: String,
    /// When it started.
    pub since: Duration,
    /// When its lock lapses.
    pub expires: Duration,
}

/// The director's state, by line id (see [`BarkDirector::snapshot`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirectorSnapshot {
    /// Format version.
    pub version: u32,
    /// Started.
    pub started: bool,
    /// The player's switch.
    pub player_switch: bool,
    /// Quiet holds taken.
    pub holds: QuietSet,
    /// The effective state last seen.
    pub effective: Effective,
    /// Start of the current dwell window.
    pub dwell_since: Duration,
    /// When the last bark started.
    pub last_bark: Option<Duration>,
    /// The line holding the speaking lock.
    pub speaking: Option<SpeakingSnapshot>,
    /// `t_l` per line id.
    pub last_played: BTreeMap<String, Duration>,
    /// Each pool's deck, by line id.
    pub decks: BTreeMap<Cue, DeckState<String>>,
}

impl DirectorSnapshot {
    /// The format this crate writes and reads.
    pub const VERSION: u32 = 1;
}

/// A snapshot that cannot be restored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RestoreError {
    /// Written by an incompatible version.
    #[error("unsupported bark director snapshot version {0}")]
    UnsupportedVersion(u32),
}
