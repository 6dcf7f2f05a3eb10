//! Parties in the load test (PROTOCOL.md section 17): honest bots form parties of two to eight
//! over the protocol (`party_invite`, `party_accept`), walk together to the NPC whose
//! conversation is shared (the sample's Wren and her ferry), and walk it as one group.
//!
//! The party's first member leads: it invites the others, and once every member stands within
//! the NPC's reach it talks; the server takes every other member in (`opened` with `shared`,
//! unrequested). Each member's client then follows the one walk the group moves
//! ([`banter_dialogue::ClientWalk`] opened shared): a line with responses is a ballot, which the
//! members vote on one after another in join order, each for the response the first voter
//! picked, and stop as soon as the content's rule is decided by the votes cast (so a `Majority`
//! ballot is decided at once, never at its time limit, and no vote comes after a decision); a
//! line without is the leader's to advance. Every member sends its own armed actions
//! (`AcceptQuest`, `AdvanceObjective`, `CheckQuest`, `CompleteQuest`) as its own walk queues
//! them, so each is paid for itself.
//!
//! Round one rides the ferry; round two talks to the NPC again, and the facts the server opens
//! it with must show the quest completed and its reward in the profile exactly once; later
//! rounds talk again until the deadline. Then every member leaves the party. A member is counted
//! paid once when exactly one `quest_completed` of the quest came to it, its profile grew by the
//! quest's reward and nothing more, and the server's facts on talking again say the same.
//!
//! The members of a party coordinate outside the protocol only as players do by voice: when all
//! have arrived (or closed the last conversation), and when the leader has talked. Everything
//! else each learns from the server.
//!
//! Every request of a party member is in the latency figures: the two rounds every party plays
//! may run past `--duration`, and they are play, not the herd of closes at the deadline that
//! [`crate::session::Metrics::wind_down`] keeps apart.

mod member;
mod walk;

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use banter_dialogue::content::{Content, NpcDef, QuestDef};
use banter_protocol::party::MAX_PARTY_SIZE;
use banter_protocol::{Position, ServerMessage};
use serde::Serialize;
use tokio::time::Instant;

use crate::bot::BotReport;
use crate::error::{Result, SimError};
use crate::facts::ClientFacts;
use crate::pace::ReadingPace;
use crate::session::{Live, Session, SessionOptions};
use crate::world::{self, distance, stand_spot};
use member::{Team, member};

/// How long a member waits for a message the party's protocol promises (an invitation, the
/// party complete, the conversation taking it in).
pub const PROMISED: Duration = Duration::from_secs(15);
/// How long the leader waits for the other members to be taken into a conversation it opened
/// before the group goes on without them.
pub const JOIN_PATIENCE: Duration = Duration::from_secs(10);
/// A shared walk with nothing sent or received for this long is stuck (longer than the sample's
/// 20 s ballot limit).
pub const STALL: Duration = Duration::from_secs(30);
/// How long a member waits for the members before it in join order to vote before it votes
/// anyway (one who cannot see any response never will).
pub const TURN_PATIENCE: Duration = Duration::from_secs(8);
/// How long the members wait for each other between rounds.
pub const ROUND_PATIENCE: Duration = Duration::from_secs(60);
/// The rounds every party plays whatever the deadline: the ride, then talking again to confirm
/// the payout.
pub const MANDATORY_ROUNDS: u32 = 2;

/// `--party-size`: parties of `min` to `max` members.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartySizes {
    pub min: usize,
    pub max: usize,
}

impl FromStr for PartySizes {
    type Err = String;

    /// `3` or `2..4` (`2..=4` too): both ends included.
    fn from_str(text: &str) -> std::result::Result<PartySizes, String> {
        let text = text.trim();
        let (min, max) = match text.split_once("..") {
            Some((min, max)) => (min, max.strip_prefix('=').unwrap_or(max)),
            None => (text, text),
        };
        let number = |t: &str| {
            t.trim().parse::<usize>().map_err(|_| {
                format!("`{text}` is not a party size: expected N or MIN..MAX, e.g. 2..4")
            })
        };
        let sizes = PartySizes {
            min: number(min)?,
            max: number(max)?,
        };
        if sizes.min < 2 || sizes.max > MAX_PARTY_SIZE || sizes.min > sizes.max {
            return Err(format!(
                "party sizes must be within 2..{MAX_PARTY_SIZE} (a party is two to eight players), \
                 got `{text}`"
            ));
        }
        Ok(sizes)
    }
}

impl fmt::Display for PartySizes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.min == self.max {
            write!(f, "{}", self.min)
        } else {
            write!(f, "{}..{}", self.min, self.max)
        }
    }
}

impl PartySizes {
    /// `bots` players as parties: sizes from `min` to `max` in turn (2, 3, 4, 2, 3, 4, ...), the
    /// last ones fitted so that every party stays within the range. An error when no such split
    /// exists (5 bots in parties of exactly 2).
    pub fn split(&self, bots: usize) -> std::result::Result<Vec<usize>, String> {
        let span = self.max - self.min + 1;
        let mut sizes = Vec::new();
        let mut left = bots;
        while left > 0 {
            let want = self.min + sizes.len() % span;
            let take = if left == want || left >= want + self.min {
                want
            } else if left <= self.max {
                left
            } else {
                left - self.min
            };
            sizes.push(take);
            left -= take;
        }
        if sizes.is_empty() || sizes.iter().any(|&s| s < self.min || s > self.max) {
            return Err(format!(
                "{bots} bots cannot be split into parties of {self} members"
            ));
        }
        Ok(sizes)
    }
}

/// Where parties play: the first NPC (in the content's order) whose conversation is shared and
/// who gives a quest, its first quest, and where the parties gather before walking over.
#[derive(Clone, Debug)]
pub struct SharedStop {
    pub npc: NpcDef,
    pub quest: QuestDef,
    /// Where a party's bodies spawn: by the nearest other NPC (the sample's kelpwick skipper, 85
    /// studs from Wren), so the party walks over together.
    pub gathering: Position,
}

impl SharedStop {
    /// The content's shared stop; an error if it has no NPC with a shared conversation who
    /// gives a quest.
    pub fn find(content: &Content) -> Result<SharedStop> {
        let npc = content
            .world
            .npcs
            .iter()
            .find(|npc| {
                content
                    .conversation(&npc.conversation)
                    .is_some_and(|g| g.shared().is_some())
                    && !content.quests_of(&npc.id).is_empty()
            })
            .ok_or_else(|| {
                SimError::Content(
                    "parties need an NPC whose conversation is shared (`Shared`) and who gives \
                     a quest; the content has none"
                        .to_owned(),
                )
            })?;
        let quest = content
            .quests_of(&npc.id)
            .first()
            .map(|q| (*q).clone())
            .ok_or_else(|| SimError::Content(format!("`{}` gives no quest", npc.id)))?;
        let nearest_other = content
            .world
            .npcs
            .iter()
            .filter(|other| other.id != npc.id && other.island == npc.island)
            .min_by(|a, b| {
                distance(a.position, npc.position).total_cmp(&distance(b.position, npc.position))
            })
            .filter(|other| distance(other.position, npc.position) <= 300.0);
        let gathering = match nearest_other {
            Some(other) => stand_spot(other),
            None => {
                let [x, y, z] = npc.position;
                [x, y, z - 60.0]
            }
        };
        Ok(SharedStop {
            npc: npc.clone(),
            quest,
            gathering,
        })
    }

    /// Where member `k` of `n` stands to talk: on a circle of 4 studs (or half the NPC's range)
    /// around the NPC, member 0 where a lone player stands.
    pub fn spot(&self, k: usize, n: usize) -> Position {
        let radius = world::STAND_OFF.min(self.npc.range / 2.0);
        let angle = std::f64::consts::TAU * k as f64 / n.max(1) as f64;
        let [x, y, z] = self.npc.position;
        [x + radius * angle.sin(), y, z - radius * angle.cos()]
    }
}

/// One party of a load run.
pub struct PartyRun {
    pub stop: Arc<SharedStop>,
    /// Each member's session and random seed; the first leads.
    pub members: Vec<(SessionOptions, u64)>,
    pub pace: ReadingPace,
    /// After [`MANDATORY_ROUNDS`], no round starts after this.
    pub deadline: Instant,
    pub fresh: ClientFacts,
    pub live: Option<Arc<Live>>,
}

/// What a party did: its members as bots (for the load's figures) and as party members.
pub struct PartyOutcome {
    pub bots: Vec<BotReport>,
    pub report: PartyReport,
}

/// The parties of a load run, added up.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PartyReport {
    /// The NPC the parties talked to and the quest they rode for.
    pub npc: String,
    pub quest: String,
    pub reward_coins: i64,
    pub reward_experience: i64,
    pub parties: usize,
    /// Parties whose every member accepted its invitation.
    pub formed: usize,
    pub members: usize,
    /// How many parties of each size.
    pub sizes: BTreeMap<usize, usize>,
    /// Shared conversations opened by a leader's `talk`.
    pub shared_conversations: u64,
    /// Members the server took into a shared conversation without a `talk` of theirs.
    pub joined_by_server: u64,
    pub votes: u64,
    /// Ballots decided, by how (`chosen.by`), counted once per conversation (its leader's).
    pub ballots: BTreeMap<String, u64>,
    /// The leaders' `advance`s.
    pub advances: u64,
    /// Members paid the quest's reward exactly once (one `quest_completed`, the profile grown by
    /// the reward and no more).
    pub paid_once: usize,
    /// Members paid more than once: must be 0.
    pub paid_more: usize,
    /// Members whose facts, when they talked to the NPC again, showed the quest completed and the
    /// reward in the profile once.
    pub confirmed: usize,
    /// `participants` pushes that came out of order (the roster of an earlier change after a
    /// later one's): the members follow the changes they name, not the stale list. Not a
    /// failure of the run, shown so a server that reorders them is seen.
    pub rosters_out_of_order: u64,
    /// Anything that went against the contract or the plan, counted; a few described.
    pub problems: u64,
    pub problem_samples: Vec<String>,
}

impl PartyReport {
    fn for_stop(stop: &SharedStop) -> PartyReport {
        PartyReport {
            npc: stop.npc.name.clone(),
            quest: stop.quest.id.clone(),
            reward_coins: i64::from(stop.quest.rewards.coins),
            reward_experience: i64::from(stop.quest.rewards.experience),
            ..PartyReport::default()
        }
    }

    fn problem(&mut self, what: String) {
        self.problems += 1;
        if self.problem_samples.len() < 10 {
            self.problem_samples.push(what);
        }
    }

    /// Adds another party's figures.
    pub fn absorb(&mut self, other: PartyReport) {
        if self.npc.is_empty() {
            self.npc = other.npc.clone();
            self.quest = other.quest.clone();
            self.reward_coins = other.reward_coins;
            self.reward_experience = other.reward_experience;
        }
        self.parties += other.parties;
        self.formed += other.formed;
        self.members += other.members;
        for (size, n) in other.sizes {
            *self.sizes.entry(size).or_insert(0) += n;
        }
        self.shared_conversations += other.shared_conversations;
        self.joined_by_server += other.joined_by_server;
        self.votes += other.votes;
        for (by, n) in other.ballots {
            *self.ballots.entry(by).or_insert(0) += n;
        }
        self.advances += other.advances;
        self.paid_once += other.paid_once;
        self.paid_more += other.paid_more;
        self.confirmed += other.confirmed;
        self.rosters_out_of_order += other.rosters_out_of_order;
        for sample in other.problem_samples {
            if self.problem_samples.len() < 10 {
                self.problem_samples.push(sample);
            }
        }
        self.problems += other.problems;
    }

    /// True when every party formed, every member was paid exactly once and confirmed so, and
    /// nothing went against the contract.
    pub fn clean(&self) -> bool {
        self.problems == 0
            && self.formed == self.parties
            && self.paid_once == self.members
            && self.paid_more == 0
            && self.confirmed == self.members
    }

    /// The party quests' line a reader checks: `party quests paid: 24 of 24 members, each once`.
    pub fn paid_line(&self) -> String {
        let mut line = format!(
            "{} of {} members, each once ({} +{} coins +{} xp",
            self.paid_once, self.members, self.quest, self.reward_coins, self.reward_experience
        );
        line.push_str(&format!(
            "; talking again confirmed {} of {})",
            self.confirmed, self.members
        ));
        if self.paid_more > 0 {
            line.push_str(&format!("; PAID MORE THAN ONCE: {}", self.paid_more));
        }
        line
    }

    /// The rows the load table shows for parties.
    pub fn rows(&self) -> Vec<(String, String)> {
        let sizes: Vec<String> = self
            .sizes
            .iter()
            .map(|(size, n)| format!("{n} of {size}"))
            .collect();
        let ballots: Vec<String> = self
            .ballots
            .iter()
            .map(|(by, n)| format!("{n} {by}"))
            .collect();
        let mut rows = vec![
            (
                "parties".to_owned(),
                format!(
                    "{} formed of {} ({}), {} members",
                    self.formed,
                    self.parties,
                    sizes.join(", "),
                    self.members
                ),
            ),
            (
                "shared conversations".to_owned(),
                format!(
                    "{} with {} ({} members taken in by the server)",
                    self.shared_conversations, self.npc, self.joined_by_server
                ),
            ),
            (
                "party votes".to_owned(),
                format!(
                    "{} votes, {} advances; ballots decided: {}",
                    self.votes,
                    self.advances,
                    if ballots.is_empty() {
                        "none".to_owned()
                    } else {
                        ballots.join(", ")
                    }
                ),
            ),
            ("party quests paid".to_owned(), self.paid_line()),
            (
                "participants out of order".to_owned(),
                format!(
                    "{} (`participants` pushes older than one already received)",
                    self.rosters_out_of_order
                ),
            ),
            ("party problems".to_owned(), self.problems.to_string()),
        ];
        for sample in &self.problem_samples {
            rows.push(("  party problem".to_owned(), sample.clone()));
        }
        rows
    }
}

/// Plays one party: logs its members in, and plays each member to the end.
pub async fn run_party(run: PartyRun) -> PartyOutcome {
    let mut report = PartyReport::for_stop(&run.stop);
    report.parties = 1;
    report.members = run.members.len();
    report.sizes.insert(run.members.len(), 1);
    let logins = futures_util::future::join_all(run.members.iter().map(|(options, _)| {
        Session::start_with(options.clone(), run.fresh.clone(), run.live.clone())
    }))
    .await;
    let mut bots = Vec::new();
    let mut sessions = Vec::new();
    for ((_, seed), login) in run.members.iter().zip(logins) {
        match login {
            Ok(session) => sessions.push((session, *seed)),
            Err(e) => {
                if let Some(live) = &run.live {
                    Live::add(&live.errors);
                }
                report.problem(format!("a member could not log in: {e}"));
                bots.push(BotReport {
                    player: None,
                    metrics: None,
                    events_posted: 0,
                    start_error: Some(format!("login: {e}")),
                });
            }
        }
    }
    let team = Arc::new(Team::new(
        sessions
            .iter()
            .map(|(s, _)| s.player().to_owned())
            .collect(),
    ));
    let members = sessions
        .into_iter()
        .enumerate()
        .map(|(k, (session, seed))| member(k, session, seed, team.clone(), &run));
    let mut joined = 0;
    for (bot, stats) in futures_util::future::join_all(members).await {
        joined += usize::from(stats.joined_party);
        bots.push(bot);
        stats.add_to(&mut report);
    }
    // Formed: every member logged in and joined the party.
    report.formed =
        usize::from(team.players.len() == run.members.len() && joined == run.members.len());
    PartyOutcome { bots, report }
}

/// The first group message `wanted` accepts, within `patience`; the others before it are
/// dropped (news of a conversation already left, of a party already complete). `None` if none
/// came.
pub async fn wait_for(
    session: &mut Session,
    patience: Duration,
    wanted: impl Fn(&ServerMessage) -> bool,
) -> Result<Option<ServerMessage>> {
    let until = Instant::now() + patience;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        match session.wait_group_message(left).await? {
            Some(message) if wanted(&message) => return Ok(Some(message)),
            Some(_) => {}
            None => return Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn party_sizes_parse_and_split_within_their_range() {
        let sizes: PartySizes = "2..4".parse().expect("a range");
        assert_eq!(sizes, PartySizes { min: 2, max: 4 });
        assert_eq!("2..=4".parse::<PartySizes>(), Ok(sizes));
        assert_eq!("3".parse::<PartySizes>(), Ok(PartySizes { min: 3, max: 3 }));
        for bad in ["1..4", "2..9", "4..2", "two", ""] {
            assert!(bad.parse::<PartySizes>().is_err(), "{bad}");
        }
        assert_eq!(sizes.split(36), Ok([2, 3, 4].repeat(4)));
        assert_eq!(
            "2..3".parse::<PartySizes>().and_then(|s| s.split(7)),
            Ok(vec![2, 3, 2])
        );
        assert_eq!(sizes.split(10), Ok(vec![2, 3, 3, 2]));
        for bots in 2..200 {
            let split = sizes
                .split(bots)
                .expect("any number from 2 splits into 2..4");
            assert_eq!(split.iter().sum::<usize>(), bots);
            assert!(split.iter().all(|s| (2..=4).contains(s)), "{split:?}");
        }
        assert!(PartySizes { min: 2, max: 2 }.split(5).is_err());
        assert!(sizes.split(1).is_err());
        assert_eq!(sizes.to_string(), "2..4");
    }

    #[test]
    fn the_sample_content_has_a_shared_stop() {
        let content = world::load_content(&world::default_content_dir()).expect("the sample");
        let stop = SharedStop::find(&content).expect("Wren");
        assert_eq!(stop.npc.id, "wren");
        assert_eq!(stop.quest.id, "FerryForTwo");
        for k in 0..4 {
            let spot = stop.spot(k, 4);
            assert!(world::in_reach(&stop.npc, spot), "{spot:?}");
        }
        assert!(distance(stop.gathering, stop.npc.position) < 120.0);
    }
}
