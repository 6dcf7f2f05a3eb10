//! Parties and shared conversations (PROTOCOL.md section 17): the wire vocabulary of a group
//! walking one conversation. The rules that decide a ballot are in `banter-dialogue`
//! (`ballot.rs`); these are only the names both sides agree on.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The most members a party holds.
pub const MAX_PARTY_SIZE: usize = 8;

/// How a shared conversation's group picks a response (content key `Mode`).
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
pub enum ChoiceMode {
    /// The conversation's leader picks; the others' votes are suggestions.
    #[default]
    Leader,
    /// More than half of the participants, or the most votes at the time limit.
    Majority,
    /// Each picks; each voter rolls 1 to 100 and the highest roll's vote wins.
    Roll,
    /// Every participant must vote for the same response.
    All,
}

/// How a `Majority` ballot's tie at the time limit is broken (content key `Tie`).
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
pub enum TieRule {
    /// The leader's vote if it is among the tied responses, else as `First`.
    #[default]
    Leader,
    /// The tied response authored first.
    First,
    /// One of the tied responses, picked by the ballot's seed.
    Roll,
}

/// How a ballot was decided (`chosen.by`).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum DecidedBy {
    Leader,
    Majority,
    TieLeader,
    TieFirst,
    TieRoll,
    Roll,
    Unanimous,
}

/// A party as its members see it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PartyView {
    pub id: String,
    pub leader: String,
    /// In the order they joined, the leader among them.
    pub members: Vec<String>,
}

/// A live invitation into a party.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InviteView {
    pub party: String,
    pub from: String,
}

/// One participant's vote on the current line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Vote {
    pub player: String,
    pub response: String,
}

/// One voter's roll in a `Roll` ballot.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Roll {
    pub player: String,
    /// 1 to 100.
    pub roll: u8,
}

/// What `opened` says of a shared conversation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SharedView {
    pub party: String,
    /// The conversation's leader.
    pub leader: String,
    /// In the order they joined.
    pub participants: Vec<String>,
    /// The votes cast on the current line so far.
    #[serde(default)]
    pub votes: Vec<Vote>,
}

/// Why a participant left a shared conversation.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
    strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum LeftReason {
    /// Sent `close`.
    Closed,
    /// Out of the NPC's reach.
    WalkedAway,
    /// The session ended.
    Dropped,
    /// Left the party.
    LeftParty,
}

/// A game server's declaration of a party of players it carries (a channel batch's `parties`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeclaredParty {
    pub party: String,
    pub leader: String,
    pub members: Vec<String>,
}
