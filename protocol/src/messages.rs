//! Wire protocol v1: JSON text frames with a `type` tag.
//!
//! Every client message may carry an `id`; the server answers each message that has one with
//! exactly one `ack` or `error` carrying the same `id`, after any messages the step caused
//! (`opened`, `jump`, `effect`, `closed`). That is what lets a client match answers to requests
//! and measure round trips. docs/PROTOCOL.md is the prose reference; docs/schema/*.schema.json
//! is generated from these types.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strum::{EnumCount, VariantArray};

use crate::action::ActionType;
use crate::party::{DecidedBy, InviteView, LeftReason, PartyView, Roll, SharedView, Vote};

/// The protocol version this crate speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// The largest text frame a client may send, in bytes (Nakama and Colyseus cap at 4 KiB).
pub const MAX_CLIENT_FRAME_BYTES: usize = 4 * 1024;

/// A position in the world, in studs.
pub type Position = [f64; 3];

/// What a client sends.
// `ClientMessageKind` is derived from it: one unit variant per message, named as its `type` tag
// (the server's metrics count messages by it). A plain comment: doc text would enter the schema.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema, strum::EnumDiscriminants)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[strum_discriminants(
    name(ClientMessageKind),
    derive(
        Hash,
        strum::IntoStaticStr,
        strum::EnumString,
        strum::VariantArray,
        strum::EnumCount
    ),
    strum(serialize_all = "snake_case")
)]
pub enum ClientMessage {
    /// Places the player's body (the first `move` spawns it) or moves it. A move faster than
    /// the server's speed limit is refused and the last valid position stays.
    Move {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<u64>,
        position: Position,
    },
    /// Opens a conversation with an NPC by display name. `instance` is a hint naming one NPC
    /// instance (names are not unique); it is used only if the registry has that instance under
    /// that name. `cached` is the content hash the client already holds for the conversation.
    Talk {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<u64>,
        npc: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        instance: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cached: Option<String>,
    },
    /// The player advances past the NPC line `node`.
    Advance {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<u64>,
        node: String,
    },
    /// The player picks the response `response` (`<node>_r<i>`).
    Choose {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<u64>,
        response: String,
    },
    /// Runs an action the conversation armed, with its canonical payload.
    Action {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<u64>,
        action: ActionType,
        payload: String,
    },
    /// Closes the open conversation.
    Close {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<u64>,
    },
    /// Reports the Afk tag (the only client-reported tag the server reads).
    SetAfk {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<u64>,
        afk: bool,
    },
    /// Changes the language the player reads: the next `opened` and `conversation` carry text in
    /// this locale (BCP 47), falling back to shorter tags and then the source language. A
    /// conversation already open keeps the text it opened with.
    SetLocale {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<u64>,
        locale: String,
    },
    /// Asks for a conversation's merged content (after an `opened` without it).
    FetchConversation {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<u64>,
        conversation: String,
    },
    /// The cutscene the server started has finished playing on the client.
    CutsceneDone {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<u64>,
        scene: String,
    },
    /// Gives up an active quest from the quest log: its progress is forgotten, it stops being
    /// tracked, and its giver offers it again. Answered by `quest_abandoned`.
    AbandonQuest {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<u64>,
        quest: String,
    },
    /// After a dropped connection: takes back the conversation the previous session left open,
    /// with the `resume_token` of that session's `welcome`, within the server's grace window.
    /// The walk continues exactly where it was: the same lines shown, the same actions armed.
    Resume {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<u64>,
        token: String,
    },
    /// Forms a party the sender leads (PROTOCOL.md section 17.1).
    PartyForm {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<u64>,
    },
    /// Invites `player` into the sender's party (formed first if the sender is in none).
    PartyInvite {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<u64>,
        player: String,
    },
    /// Accepts a live invitation into `party`.
    PartyAccept {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<u64>,
        party: String,
    },
    /// Leaves the sender's party.
    PartyLeave {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<u64>,
    },
}

/// A text frame that is not a valid client message: what is wrong, and the request id the
/// frame carried if it is a JSON object with a numeric `id` (so the refusal can answer it).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct DecodeError {
    pub id: Option<u64>,
    pub message: String,
}

/// Binds `$id` to the request id field of the client message `$message` (every variant has
/// one) and evaluates `$body`: the one list of variants [`ClientMessage::id`] and
/// [`ClientMessage::with_id`] share.
macro_rules! with_request_id {
    ($message:expr, $id:ident => $body:expr) => {
        match $message {
            ClientMessage::Move { $id, .. }
            | ClientMessage::Talk { $id, .. }
            | ClientMessage::Advance { $id, .. }
            | ClientMessage::Choose { $id, .. }
            | ClientMessage::Action { $id, .. }
            | ClientMessage::Close { $id }
            | ClientMessage::SetAfk { $id, .. }
            | ClientMessage::SetLocale { $id, .. }
            | ClientMessage::FetchConversation { $id, .. }
            | ClientMessage::CutsceneDone { $id, .. }
            | ClientMessage::AbandonQuest { $id, .. }
            | ClientMessage::Resume { $id, .. }
            | ClientMessage::PartyForm { $id }
            | ClientMessage::PartyInvite { $id, .. }
            | ClientMessage::PartyAccept { $id, .. }
            | ClientMessage::PartyLeave { $id } => $body,
        }
    };
}

impl ClientMessage {
    /// Decodes one text frame: the frame decoder the server runs on every message (and the
    /// `frame_decoder` fuzz target). Never panics.
    ///
    /// The request id, like every optional field, may be left out or be `null` (the same as
    /// leaving it out). Any other `id` must be a JSON integer from 0 to 2^64-1, written without
    /// a sign, fraction or exponent; otherwise the frame is malformed and its error carries no
    /// id (there is none to answer under, and the decoder never makes one up). A frame that is
    /// a JSON object with a valid `id` but no valid message still yields that id.
    pub fn decode(text: &str) -> Result<ClientMessage, DecodeError> {
        if let Some(message) = crate::hot_decode::decode(text) {
            return Ok(message);
        }
        serde_json::from_str(text).map_err(|e| match peek_id(text) {
            PeekedId::Invalid => DecodeError {
                id: None,
                message: format!("`id` must be an unsigned 64-bit integer ({e})"),
            },
            PeekedId::Id(id) => DecodeError {
                id: Some(id),
                message: e.to_string(),
            },
            PeekedId::Absent => DecodeError {
                id: None,
                message: e.to_string(),
            },
        })
    }

    /// The request id, if the client gave one.
    pub fn id(&self) -> Option<u64> {
        with_request_id!(self, id => *id)
    }

    /// The same message with its request id set.
    pub fn with_id(mut self, new_id: u64) -> Self {
        with_request_id!(&mut self, id => *id = Some(new_id));
        self
    }

    /// The message's `type`, for metrics and logs.
    pub fn kind(&self) -> &'static str {
        ClientMessageKind::from(self).into()
    }
}

/// Where a player stands with a quest.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    JsonSchema,
    strum::IntoStaticStr,
    strum::VariantArray,
    strum::EnumCount,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum QuestStatus {
    /// Prerequisites not met.
    Unavailable,
    /// May be accepted.
    Available,
    /// Accepted, not handed in.
    Active,
    /// Handed in and paid.
    Completed,
}

impl QuestStatus {
    /// Every status, in declaration order.
    pub const ALL: [QuestStatus; QuestStatus::COUNT] = crate::all(QuestStatus::VARIANTS);

    /// The status as it appears on the wire.
    pub fn name(self) -> &'static str {
        self.into()
    }
}

/// The facts a client evaluates `Conditions` against: the same facts the server uses.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FactSheet {
    /// Status of every quest that is not `available` (absent means available).
    #[serde(default)]
    pub quests: BTreeMap<String, QuestStatus>,
    /// Objective progress, keyed `questId/objectiveId`.
    #[serde(default)]
    pub progress: BTreeMap<String, u32>,
    pub coins: i64,
    pub experience: i64,
    pub tutorial_stage: i64,
    /// States and tags that hold, by name (`Dialogue.Talking`, `Afk`).
    #[serde(default)]
    pub has: Vec<String>,
    /// The story variables this conversation's conditions read, by name (PROTOCOL.md 10.1).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub vars: BTreeMap<String, VarValue>,
    /// How often the player was shown each line (or picked each response) this conversation
    /// reads, by vertex name; absent is 0.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub visits: BTreeMap<String, u32>,
    /// When each `LeastRecent` candidate the player has seen was last shown, as an ordering:
    /// larger is more recent.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub last_seen: BTreeMap<String, u64>,
    /// How many times the player opened this conversation before this time.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub opens: u32,
    /// The conversation's seed for `Weighted` groups, present exactly when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "seed_text")]
    #[schemars(with = "Option<String>")]
    pub seed: Option<u64>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// A `u64` seed as a decimal string on the wire (JSON numbers lose precision past 2^53).
mod seed_text {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(seed: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
        match seed {
            Some(seed) => s.serialize_str(&seed.to_string()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        let text = Option::<String>::deserialize(d)?;
        text.map(|t| {
            t.parse::<u64>()
                .ok()
                .filter(|n| n.to_string() == t)
                .ok_or_else(|| serde::de::Error::custom("seed: not a canonical decimal u64"))
        })
        .transpose()
    }
}

/// A story variable's value (CONTENT.md "Story variables"): a JSON boolean, integer or string.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum VarValue {
    Bool(bool),
    Int(i64),
    Text(String),
}

impl VarValue {
    /// The value's type name, as `variables.json` writes it.
    pub fn type_name(&self) -> &'static str {
        match self {
            VarValue::Bool(_) => "bool",
            VarValue::Int(_) => "int",
            VarValue::Text(_) => "string",
        }
    }
}

/// The player's persistent profile as the client sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub coins: i64,
    pub experience: i64,
    pub tutorial_stage: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracked_quest: Option<String>,
}

/// An NPC instance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NpcRef {
    pub id: String,
    pub name: String,
    pub island: String,
}

/// What an accepted action did, for the client to show.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Effect {
    /// `AcceptQuest`: the quest is now active, every one of its objectives at progress 0.
    QuestAccepted {
        quest: String,
        /// The quest's objective ids, in the order of the quest's definition, so a client can
        /// track progress without the quest definitions.
        objectives: Vec<String>,
    },
    QuestChecked {
        quest: String,
        done: bool,
    },
    QuestCompleted {
        quest: String,
        coins: i64,
        experience: i64,
    },
    ObjectiveAdvanced {
        quest: String,
        objective: String,
        progress: u32,
        target: u32,
    },
    QuestTracked {
        quest: String,
    },
    OpenShop {
        shop: String,
    },
    // A struct variant with no fields (not a unit variant) so that, like every other effect,
    // it refuses unknown fields when decoded.
    OpenSellMenu {},
    PlayCutscene {
        scene: String,
    },
    ChooseRideBoat {
        quest: String,
    },
    /// `SetVariable`: the story variable now has this value.
    VariableSet {
        variable: String,
        value: VarValue,
    },
}

/// Why the server ends a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ByeReason {
    /// The same player connected again; the newer session takes over.
    Replaced,
    /// The server is shutting down.
    Shutdown,
    /// The client kept sending past the rate limit.
    Flooding,
    /// The player's token expired; log in again and reconnect.
    TokenExpired,
    /// The client stopped answering pings.
    Timeout,
}

/// Why a conversation closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CloseReason {
    /// The client closed it.
    Client,
    /// The player walked out of the NPC's reach.
    WalkedAway,
}

/// Stable error codes. Clients match on these, never on the message text.
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
    strum::EnumCount,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ErrorCode {
    /// The frame is not a valid JSON client message.
    Malformed,
    /// The frame is larger than 4 KiB.
    FrameTooLarge,
    /// Binary frames are not part of the protocol.
    BinaryFrame,
    /// Too many messages; slow down (a client that keeps flooding is disconnected).
    RateLimited,
    /// No conversation is open.
    NoConversation,
    /// A conversation is already open; close it first.
    ConversationOpen,
    /// No NPC of that name (and instance) in the registry.
    UnknownNpc,
    /// The player is farther than the NPC's range plus the lag allowance.
    TooFar,
    /// The player has no body in the world yet (no `move` received).
    NoBody,
    /// Less than 1.5 s since the last conversation opened.
    TalkCooldown,
    /// The player is busy (a cutscene, a conversation, a theft) and cannot talk.
    Busy,
    /// The move was faster than the speed limit; the last valid position stays.
    Teleport,
    /// No conversation by that name.
    UnknownConversation,
    /// No such node or response in the open conversation.
    UnknownVertex,
    /// The player was never shown this node or response.
    NotReachable,
    /// `advance` named something that is not an NPC line.
    NotALine,
    /// `choose` named something that is not a response.
    NotAResponse,
    /// The line waits for the player to pick a response.
    AwaitsChoice,
    /// The line waits for the server's jump.
    AwaitsJump,
    /// The response's conditions do not hold.
    ConditionFailed,
    /// The response is shown greyed out (`Disabled`): its `Conditions` do not hold now.
    ResponseDisabled,
    /// No armed action of that type.
    NotArmed,
    /// An action of that type is armed, but with a different payload.
    PayloadMismatch,
    /// The quest's state does not allow this action now.
    QuestState,
    /// `cutscene_done` named a scene that is not playing.
    NoCutscene,
    /// The store is unavailable; retry later. Nothing was applied.
    StoreUnavailable,
    /// The database went away while the change was being committed and cannot be asked yet
    /// whether it took effect. The arming is kept: send the same message again; it is applied
    /// at most once, and the answer then says what happened.
    OutcomeUnknown,
    /// Something went wrong on the server; nothing was applied.
    Internal,
    /// No conversation to resume with that token: expired, another player's or session's,
    /// already resumed, or replaced by a newer conversation. Talk again.
    ResumeRefused,
    /// The locale is not a BCP 47 language tag (`ja`, `pt-BR`).
    BadLocale,
    /// A game-server channel: the credential does not speak for this player.
    NotInScope,
    /// A game-server channel: a message or `leave` for a player not on the channel.
    NotJoined,
    /// A game-server channel: a `join` for a player already on the channel.
    AlreadyJoined,
    /// A game-server channel: a `join` past the channel's player limit.
    ChannelFull,
    /// Another game server's channel carries the player: neither another credential's channel
    /// nor the player's own client may take the session.
    CarriedElsewhere,
    /// A `move` from a player the game server places: positions come from the engine.
    PositionOwned,
    /// The sender is in no party.
    NotInParty,
    /// The sender (or the invitee) is in a party already; leave it first.
    AlreadyInParty,
    /// The party has 8 members.
    PartyFull,
    /// No live invitation into that party.
    NoInvite,
    /// In a shared conversation only its leader advances.
    NotLeader,
    /// A vote for a response under a line that is not the ballot's.
    NotCurrent,
    /// The party's shared conversation is open with another NPC or on another server instance.
    SharedElsewhere,
}

impl ErrorCode {
    /// Every code, in declaration order.
    pub const ALL: [ErrorCode; ErrorCode::COUNT] = crate::all(ErrorCode::VARIANTS);

    /// The code as it appears on the wire.
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// True if retrying the same message later may succeed.
    pub fn retryable(self) -> bool {
        matches!(
            self,
            ErrorCode::RateLimited
                | ErrorCode::TalkCooldown
                | ErrorCode::StoreUnavailable
                | ErrorCode::OutcomeUnknown
                | ErrorCode::SharedElsewhere
        )
    }
}

/// What the server sends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ServerMessage {
    /// First message of a session.
    Welcome {
        protocol: u32,
        player: String,
        session: u64,
        profile: Profile,
        /// Keep it: after a dropped connection, `resume` with it takes back the conversation
        /// this session had open (within the server's grace window). Empty from a server that
        /// predates resume.
        #[serde(default)]
        resume_token: String,
        /// Where the world remembers the player's body (a reconnect within the server's memory
        /// of it): the next `move` must start from here, not teleport. Absent: spawn anywhere.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        position: Option<Position>,
        /// A cutscene quest's scene still playing when the player's previous session ended (a
        /// dropped connection, a server restart, another instance): the player is in that
        /// cutscene now. Play it (or skip it) and send `cutscene_done` with this scene; its
        /// quest is paid once. Absent: no cutscene.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cutscene: Option<String>,
        /// The locale the player's text is served in: the one asked for (`?locale=`), or the
        /// first of its fallbacks the content has, or the source language. Empty from a server
        /// that predates locales.
        #[serde(default)]
        locale: String,
        /// Every locale the content can be read in (the source first, the pseudo-locale last).
        #[serde(default)]
        locales: Vec<String>,
        /// The player's party (PROTOCOL.md section 17.1). Absent: in none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        party: Option<PartyView>,
        /// Live invitations into parties, oldest first. Absent: none.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        invites: Vec<InviteView>,
    },
    /// A `resume` took back the conversation: the walk is where the dropped session left it.
    /// `hash` is the content version the conversation runs on (the one the client cached).
    Resumed { conversation: String, hash: String },
    /// The message with this id was accepted.
    Ack { id: u64 },
    /// A conversation opened. `content` is the merged conversation in the canonical JSON
    /// format, omitted when the client's `cached` hash matched `hash`.
    Opened {
        conversation: String,
        npc: NpcRef,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        speaker: Option<String>,
        entry: String,
        hash: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        facts: FactSheet,
        /// A shared conversation's party, leader, participants and votes (section 17.2).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        shared: Option<SharedView>,
    },
    /// The server decided where the conversation goes (a quest check's result).
    Jump { node: String },
    /// An accepted action's effect.
    Effect {
        action: ActionType,
        effect: Effect,
        profile: Profile,
    },
    /// Answers `set_locale`: the locale the player's text is served in from now on (the one
    /// asked for, or the first of its fallbacks the content has, or the source language), as
    /// `welcome.locale` says it at connection time.
    LocaleSet { locale: String },
    /// An `abandon_quest` was applied: the quest is no longer active (never accepted, as far as
    /// the walk's facts go) and `profile` is the player's profile after it.
    QuestAbandoned { quest: String, profile: Profile },
    /// The open conversation closed.
    Closed { reason: CloseReason },
    /// A conversation's merged content, answering `fetch_conversation`.
    Conversation {
        conversation: String,
        hash: String,
        content: String,
    },
    /// The message with this id (if any) was refused. Nothing changed.
    Error {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<u64>,
        code: ErrorCode,
        message: String,
        retryable: bool,
    },
    /// The session ends; the server closes the socket after this.
    Bye { reason: ByeReason, message: String },
    /// The receiver's party now (section 17.1). Absent: in none.
    Party {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        party: Option<PartyView>,
    },
    /// An invitation into `party` from `from`.
    PartyInvited { party: String, from: String },
    /// The participants of the open shared conversation changed (section 17.2).
    Participants {
        leader: String,
        participants: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        joined: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        left: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<LeftReason>,
    },
    /// A participant's vote (or changed vote) on the current line.
    Voted { player: String, response: String },
    /// The group's decision on `line` (section 17.3). `node` absent: the response awaits a
    /// quest check's `jump`, or the conversation ends there.
    Chosen {
        line: String,
        response: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        node: Option<String>,
        by: DecidedBy,
        votes: Vec<Vote>,
        /// The ballot's seed, a decimal string of an unsigned 64-bit integer, when a roll decided.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seed: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        rolls: Vec<Roll>,
    },
    /// The leader advanced past `line`; `node` absent: the conversation ends.
    Advanced {
        line: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        node: Option<String>,
    },
}

impl ServerMessage {
    /// The message as the JSON text of its frame: serde's encoding, except the `ack` and the
    /// `effect` (a step's usual answers), written straight, byte for byte what serde writes
    /// (`hot_encode.rs`).
    pub fn to_json(&self) -> String {
        match self {
            ServerMessage::Ack { id } => crate::hot_encode::ack(*id),
            ServerMessage::Effect {
                action,
                effect,
                profile,
            } => crate::hot_encode::effect(*action, effect, profile),
            other => serde_json::to_string(other).unwrap_or_default(),
        }
    }
}

/// What the `id` of a frame that did not decode is.
enum PeekedId {
    /// Not a JSON object, or one without an `id` (or with `"id": null`, or two of them).
    Absent,
    /// A JSON object with a valid request id, whatever else it holds.
    Id(u64),
    /// A JSON object whose `id` is not an unsigned 64-bit integer.
    Invalid,
}

/// The `id` of a frame that did not decode as a message.
fn peek_id(text: &str) -> PeekedId {
    #[derive(Deserialize)]
    struct IdOnly {
        #[serde(default)]
        id: Option<serde_json::Value>,
    }
    match serde_json::from_str::<IdOnly>(text) {
        Ok(IdOnly { id: Some(id) }) => id.as_u64().map_or(PeekedId::Invalid, PeekedId::Id),
        Ok(IdOnly { id: None }) | Err(_) => PeekedId::Absent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_messages_are_written_by_serde() {
        let closed = ServerMessage::Closed {
            reason: CloseReason::Client,
        };
        assert_eq!(
            closed.to_json(),
            serde_json::to_string(&closed).unwrap_or_default()
        );
    }
}
