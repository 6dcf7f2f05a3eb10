//! The cheat catalogue: each cheat is run against a live server by its own new player, and
//! checked twice: the server must answer with the expected refusal, and the player's facts
//! (quests, progress, coins, experience, tutorial stage) must be exactly what they were before
//! the cheat, as the server itself reports them when the player talks again ([`verdict`]).
//!
//! The catalogue plays on the sample content (Pim's tale, Grandpa Fennick's snappers, the
//! skippers); a content folder without those NPCs and quests fails the rows that need them.
//! Its cheats, by area:
//!
//! - [`dialogue`]: forged and replayed actions, altered payloads, lines and responses never
//!   shown, a skipped quest check, and resuming a conversation after walking away from it;
//! - [`world`]: talking from too far, too soon, bodiless or across islands, teleporting, and a
//!   burst of small moves (each within the per-message slack, together far over the limit);
//! - [`tokens`]: forged, tampered, unsigned and expired tokens, and player tokens on the
//!   trusted endpoints;
//! - [`logins`]: many logins of one player at the same instant, which must leave exactly one
//!   live session;
//! - [`frames`]: oversized, binary and malformed frames, and flooding;
//! - [`channels`]: game-server channels: out-of-scope players, replayed, older and skipped
//!   batches, a revoked credential, a channel player moved by its own client or connecting
//!   directly, two credentials claiming one player, oversized and malformed batches;
//! - [`parties`]: parties and shared conversations at Wren: stuffing a ballot, voting for a
//!   response not shown, outsiders talking and voting, a follower advancing, a vote on a line
//!   the group left, acting on another member's arming, leaving between a vote and its payout,
//!   two parties racing for one NPC, and a member talking on another instance (with
//!   `--second-endpoint`; skipped without).
//!
//! Some (the burst of moves, the resume, the logins, and the party cheats whose every step a
//! correct server accepts: a stuffed ballot, an outsider at the party's NPC, leaving before the
//! payout, two parties racing) are judged by the state they leave rather than by any answer
//! ([`Outcome::State`]): each of their steps may be answered `ack` by a correct server, so no
//! single reply code says whether the cheat worked. Each cheat
//! is played by a [`cheater`], a player the catalogue controls message by message.

pub mod channels;
pub mod cheater;
pub mod dialogue;
pub mod frames;
pub mod logins;
pub mod parties;
pub mod tokens;
pub mod verdict;
pub mod world;

use std::sync::Arc;

use banter_dialogue::content::Content;

use crate::http::Endpoint;
use cheater::Cheat;

pub use verdict::{AttackReport, CheatRow, Outcome, Verdict, verdict};

/// How the catalogue reaches the server.
#[derive(Clone, Debug)]
pub struct AttackOptions {
    pub endpoint: Endpoint,
    pub content: Arc<Content>,
    /// The server's signing secret, to mint an expired but otherwise valid token.
    pub auth_secret: String,
    pub service_key: String,
    /// Makes device ids unique to this run.
    pub run_id: String,
    /// Another instance of the same server on the same database (PostgreSQL), for the cheats
    /// that need two: without it they are skipped.
    pub second_endpoint: Option<Endpoint>,
}

/// The sample content the catalogue plays on.
const PIM: &str = "pim";
const FENNICK: &str = "fennick";
const PIM_QUEST: &str = "PimsTideTale";
const PIM_OBJECTIVE: &str = "PimsTideTale|HearTheTale|1|mistral_cay";

/// Every cheat in the catalogue, in the report's order.
fn catalogue(options: &Arc<AttackOptions>) -> Vec<Cheat> {
    let mut cheats = dialogue::cheats(options);
    cheats.extend(world::cheats(options));
    cheats.push(world::speed_burst(options));
    cheats.push(dialogue::resume_walked_away(options));
    cheats.push(logins::race(options));
    cheats.extend(tokens::cheats(options));
    cheats.extend(frames::cheats(options));
    cheats.extend(channels::cheats(options));
    cheats.extend(parties::cheats(options));
    cheats
}

/// Runs the whole catalogue, every cheat by its own player, all at once.
pub async fn run(options: AttackOptions) -> AttackReport {
    let options = Arc::new(options);
    run_cheats(catalogue(&options)).await
}

/// Runs only the party cheats ([`parties`]).
pub async fn run_party_cheats(options: AttackOptions) -> AttackReport {
    let options = Arc::new(options);
    run_cheats(parties::cheats(&options)).await
}

/// Runs only the game-server channel cheats ([`channels`]).
pub async fn run_channel_cheats(options: AttackOptions) -> AttackReport {
    let options = Arc::new(options);
    run_cheats(channels::cheats(&options)).await
}

async fn run_cheats(cheats: Vec<Cheat>) -> AttackReport {
    let mut handles = Vec::new();
    for cheat in cheats {
        let handle = tokio::spawn(cheat.run);
        handles.push((cheat.name, cheat.expected, handle));
    }
    let mut rows = Vec::new();
    for (name, expected, handle) in handles {
        let (got, unchanged) = match handle.await {
            Ok(Ok(observed)) => {
                let unchanged = observed.after.as_ref().ok().map(|a| *a == observed.before);
                (observed.got, unchanged)
            }
            Ok(Err(e)) => (Outcome::Failed(e.to_string()), None),
            Err(e) => (Outcome::Failed(format!("panicked: {e}")), None),
        };
        rows.push(CheatRow {
            cheat: name.to_owned(),
            expected: expected.to_string(),
            got: got.to_string(),
            profile_unchanged: unchanged,
            verdict: verdict(&expected, &got, unchanged),
        });
    }
    AttackReport::from_rows(rows)
}
