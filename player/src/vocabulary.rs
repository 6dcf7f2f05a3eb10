//! The closed vocabulary: owners, their states and weights, tags and sub-zones.
//!
//! The article registers the whole vocabulary "when the machine is required, not when some
//! controller boots", so that holding a reference to the machine guarantees the names exist.
//! In Rust the compiler is the registry: every owner, state, tag and sub-zone below is an enum
//! variant produced by one macro invocation, so a misspelled name is a compile error instead of
//! "a write that silently does nothing". The string names exist only at the edges (data
//! catalogs, snapshots), and parsing them returns a typed [`UnknownName`] error so a typo in a
//! data file is a load-time error.
//!
//! Why one file over 600 lines: most of it is the vocabulary itself, one `owners!` and one
//! `tags!` invocation listing every name, and the parsing and display every name needs. It is
//! data the compiler checks; split, the one list would become several.

use core::fmt;
use core::str::FromStr;

use crate::machine::{OwnerHandle, OwnerState, SubZoneWriter, TagHandle};

/// What kind of name failed to parse; part of [`UnknownName`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NameKind {
    /// An [`Owner`] name such as `"Fishing"`.
    Owner,
    /// A [`State`] name such as `"Fishing.Casted"`.
    State,
    /// A state of one particular owner, e.g. parsing `"Boat.Driving"` as a [`FishingState`].
    OwnerState(Owner),
    /// The [`Effective`] state: `"Idle"` or a state name.
    Effective,
    /// A [`Tag`] name such as `"UsingBait"` or `"SubZone.Dock"`.
    Tag,
    /// A [`SubZone`] name such as `"SubZone.Dock"`.
    SubZone,
    /// A [`Fact`]: a state name or a tag name.
    Fact,
}

impl fmt::Display for NameKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NameKind::Owner => f.write_str("owner"),
            NameKind::State => f.write_str("state"),
            NameKind::OwnerState(o) => write!(f, "{} state", o.name()),
            NameKind::Effective => f.write_str("effective state"),
            NameKind::Tag => f.write_str("tag"),
            NameKind::SubZone => f.write_str("sub-zone"),
            NameKind::Fact => f.write_str("fact (state or tag)"),
        }
    }
}

/// A name that is not in the vocabulary.
///
/// Returned by every `FromStr` in this crate (and surfaced by the serde impls), so a data
/// catalog that refers to `"Fishing.Cast"` fails when it is loaded, not by silently never
/// matching.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct UnknownName {
    /// What was being parsed.
    pub kind: NameKind,
    /// The text that did not match any name.
    pub name: String,
}

impl UnknownName {
    fn new(kind: NameKind, name: &str) -> Self {
        UnknownName {
            kind,
            name: name.to_owned(),
        }
    }
}

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown {} name {:?}", self.kind, self.name)
    }
}

impl std::error::Error for UnknownName {}

/// Declares the owners, their weights and their states in one place.
///
/// Generates the [`Owner`] enum (with weights), the zero-sized owner marker types in
/// [`owner`], one state enum per owner, the umbrella [`State`] enum, the string names
/// (`"Owner.State"`), and [`OwnerHandles`] with one handle field per owner.
macro_rules! owners {
    ($(
        $(#[$odoc:meta])*
        $owner:ident ($field:ident, weight = $weight:literal) =>
        $(#[$sdoc:meta])*
        $states:ident {
            $( $(#[$vdoc:meta])* $variant:ident ),+ $(,)?
        }
    )+) => {
        /// An owning system: the only one allowed to enter or leave its states.
        ///
        /// Each owner has its own region of the machine, holding at most one of its states
        /// (σ_o ∈ S_o ∪ {⊥}). The weight belongs to the owner, not to the state: two states
        /// of the same owner are mutually exclusive, so their weights are never compared.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Owner {
            $( $(#[$odoc])* $owner, )+
        }

        impl Owner {
            /// How many owners exist; the machine holds one region per owner.
            pub const COUNT: usize = [$(stringify!($owner)),+].len();

            /// Every owner, in declaration (and region) order.
            pub const ALL: [Owner; Owner::COUNT] = [$(Owner::$owner),+];

            /// The owner's tier. The effective state is the heaviest held state.
            ///
            /// The tiers keep gaps of ten "so a new owner can be slotted between two existing
            /// ones without renumbering anything".
            pub const fn weight(self) -> u8 {
                match self {
                    $( Owner::$owner => $weight, )+
                }
            }

            /// Stable name, e.g. `"Fishing"`: the prefix of every state it owns.
            pub const fn name(self) -> &'static str {
                match self {
                    $( Owner::$owner => stringify!($owner), )+
                }
            }

            /// Index of this owner's region in the machine.
            pub(crate) const fn index(self) -> usize {
                self as usize
            }
        }

        impl FromStr for Owner {
            type Err = UnknownName;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Owner::ALL
                    .into_iter()
                    .find(|o| o.name() == s)
                    .ok_or_else(|| UnknownName::new(NameKind::Owner, s))
            }
        }

        /// Zero-sized owner marker types, used only as the type parameter of
        /// [`OwnerHandle`](crate::OwnerHandle).
        ///
        /// They are uninhabited: nothing can construct them, they only name an owner at the
        /// type level so that `OwnerHandle<owner::Fishing>::enter` accepts a
        /// [`FishingState`](crate::FishingState) and nothing else.
        pub mod owner {
            $(
                $(#[$odoc])*
                #[derive(Debug)]
                pub enum $owner {}

                impl crate::machine::sealed::Sealed for $owner {}

                impl crate::OwnerKind for $owner {
                    type State = crate::$states;
                    const OWNER: crate::Owner = crate::Owner::$owner;
                }
            )+
        }

        $(
            $(#[$sdoc])*
            #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
            pub enum $states {
                $( $(#[$vdoc])* $variant, )+
            }

            impl $states {
                /// The owner of every state of this type.
                pub const OWNER: Owner = Owner::$owner;

                /// Every state of this owner.
                pub const ALL: &'static [$states] = &[$($states::$variant),+];

                /// Stable name, `"Owner.State"`.
                pub const fn name(self) -> &'static str {
                    match self {
                        $( $states::$variant => concat!(stringify!($owner), ".", stringify!($variant)), )+
                    }
                }
            }

            impl crate::machine::sealed::Sealed for $states {}

            impl OwnerState for $states {
                const OWNER: Owner = Owner::$owner;
                fn into_state(self) -> State {
                    State::$owner(self)
                }
                fn from_state(state: State) -> Option<Self> {
                    match state {
                        State::$owner(s) => Some(s),
                        _ => None,
                    }
                }
            }

            impl From<$states> for State {
                fn from(s: $states) -> State {
                    State::$owner(s)
                }
            }

            impl From<$states> for Fact {
                fn from(s: $states) -> Fact {
                    Fact::State(State::$owner(s))
                }
            }

            impl From<$states> for Effective {
                fn from(s: $states) -> Effective {
                    Effective::State(State::$owner(s))
                }
            }

            impl TryFrom<State> for $states {
                type Error = State;
                /// Narrows a [`State`] to this owner's states; gives the state back otherwise.
                fn try_from(state: State) -> Result<Self, State> {
                    <$states as OwnerState>::from_state(state).ok_or(state)
                }
            }

            impl FromStr for $states {
                type Err = UnknownName;
                fn from_str(s: &str) -> Result<Self, Self::Err> {
                    $states::ALL
                        .iter()
                        .copied()
                        .find(|st| st.name() == s)
                        .ok_or_else(|| UnknownName::new(NameKind::OwnerState(Owner::$owner), s))
                }
            }

            impl fmt::Display for $states {
                fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str(self.name())
                }
            }
        )+

        /// Any state of any owner. The variant is the owner, so a state cannot be filed
        /// under the wrong owner.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum State {
            $( $(#[$odoc])* $owner($states), )+
        }

        impl State {
            /// How many states exist across all owners.
            pub const COUNT: usize = [$($(stringify!($variant),)+)+].len();

            /// Every state of every owner, grouped by owner in declaration order.
            pub const ALL: [State; State::COUNT] = [$($(State::$owner($states::$variant),)+)+];

            /// The owner whose region this state lives in.
            pub const fn owner(self) -> Owner {
                match self {
                    $( State::$owner(_) => Owner::$owner, )+
                }
            }

            /// The owner's weight: states are ranked by who owns them.
            pub const fn weight(self) -> u8 {
                self.owner().weight()
            }

            /// Stable name, `"Owner.State"`, e.g. `"Fishing.Casted"`.
            pub const fn name(self) -> &'static str {
                match self {
                    $( State::$owner(s) => s.name(), )+
                }
            }
        }

        /// Every capability to write the machine, minted once by
        /// [`PlayerStateMachine::new`](crate::PlayerStateMachine::new).
        ///
        /// One pub field per owner (and per hand-written tag, and the sub-zone writer): each
        /// controller moves its own handle out at wiring time. "Reads are global and writes
        /// are private": a controller that only holds `OwnerHandle<owner::Boat>` cannot touch
        /// the fishing region, so FishingController's guards stay load-bearing.
        #[derive(Debug)]
        #[non_exhaustive]
        pub struct OwnerHandles {
            $(
                #[doc = concat!("The only writer of the ", stringify!($owner), " region.")]
                pub $field: OwnerHandle<owner::$owner>,
            )+
            /// One writer per hand-written tag.
            pub tags: TagHandles,
            /// The only writer of sub-zone tags.
            pub sub_zones: SubZoneWriter,
        }

        impl OwnerHandles {
            pub(crate) fn mint() -> Self {
                OwnerHandles {
                    $( $field: OwnerHandle::mint(), )+
                    tags: TagHandles::mint(),
                    sub_zones: SubZoneWriter::mint(),
                }
            }
        }
    };
}

owners! {
    /// On foot. Weight 10: the least specific thing the player can be doing.
    Foot (foot, weight = 10) =>
    /// States of the [`Owner::Foot`] region.
    FootState {
        /// Walking around the island.
        Walking,
    }

    /// At the helm. Weight 20: the boat outranks walking.
    Boat (boat, weight = 20) =>
    /// States of the [`Owner::Boat`] region.
    BoatState {
        /// Sitting at the helm. Stays active while fishing from the boat, which is why there
        /// is no `InBoat` tag: `is_state_active` already answers that.
        Driving,
    }

    /// Fishing. Weight 30: "Fishing outranks the boat you fish from".
    Fishing (fishing, weight = 30) =>
    /// States of the [`Owner::Fishing`] region. Load-bearing: FishingController's guards
    /// ("if I am in COOLDOWN, don't cast") read this, which is why only it may write it.
    FishingState {
        /// Holding the cast button to charge the throw.
        Charging,
        /// The line is in the water, waiting for a bite.
        Casted,
        /// The reel minigame: takes over the screen, but the player chose it, so it is not
        /// an interruption.
        Minigame,
        /// After a catch or a loss; casting is refused until it ends.
        Cooldown,
    }

    /// Theft. Weight 40: "the chase is what you are doing now, and the cast you abandoned is
    /// not".
    Steal (steal, weight = 40) =>
    /// States of the [`Owner::Steal`] region.
    StealState {
        /// Stealing from another player.
        Stealing,
        /// Being stolen from.
        Victim,
    }

    /// Conversation. Weight 50: "at that point the NPC is what's on screen".
    Dialogue (dialogue, weight = 50) =>
    /// States of the [`Owner::Dialogue`] region.
    DialogueState {
        /// Talking to an NPC.
        Talking,
    }

    /// Story. Weight 60: "A cutscene outranks everything, because the player controls
    /// nothing".
    Story (story, weight = 60) =>
    /// States of the [`Owner::Story`] region.
    StoryState {
        /// A cutscene is playing.
        Cutscene,
        /// The guided island tour.
        IslandTour,
    }
}

impl FromStr for State {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        State::ALL
            .into_iter()
            .find(|st| st.name() == s)
            .ok_or_else(|| UnknownName::new(NameKind::State, s))
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Declares the tags: the hand-written ones and one per sub-zone kind.
///
/// The article generates the sub-zone tags "from the sub-zone list so the vocabulary and its
/// writer come out of the same code". This macro is that code: the one sub-zone list below
/// produces the [`SubZone`] enum, the `Tag::SubZone(..)` tags and their bits, their names
/// (`"SubZone.Dock"`), and the vocabulary [`SubZoneWriter`] accepts. The hand-written list
/// produces the [`Tag`] variants, the zero-sized marker types in [`tag`] and one
/// [`TagHandle`] per tag in [`TagHandles`].
macro_rules! tags {
    (
        hand_written {
            $( $(#[$tdoc:meta])* $tag:ident ($tfield:ident), )+
        }
        sub_zones {
            $( $(#[$zdoc:meta])* $zone:ident, )+
        }
    ) => {
        /// A kind of sub-zone on the map. Being inside one sets the tag
        /// `Tag::SubZone(kind)`, written only through [`SubZoneWriter`].
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum SubZone {
            $( $(#[$zdoc])* $zone, )+
        }

        impl SubZone {
            /// How many sub-zone kinds exist.
            pub const COUNT: usize = [$(stringify!($zone)),+].len();

            /// Every sub-zone kind.
            pub const ALL: [SubZone; SubZone::COUNT] = [$(SubZone::$zone),+];

            /// Stable name of the sub-zone tag, e.g. `"SubZone.Dock"`.
            pub const fn name(self) -> &'static str {
                match self {
                    $( SubZone::$zone => concat!("SubZone.", stringify!($zone)), )+
                }
            }

            /// The tag that says the player is inside this kind of sub-zone.
            pub const fn tag(self) -> Tag {
                Tag::SubZone(self)
            }
        }

        impl FromStr for SubZone {
            type Err = UnknownName;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                SubZone::ALL
                    .into_iter()
                    .find(|z| z.name() == s)
                    .ok_or_else(|| UnknownName::new(NameKind::SubZone, s))
            }
        }

        /// A free-floating boolean about the player that could never be their main activity.
        ///
        /// "The test for state versus tag is whether the thing could answer 'what is he doing
        /// right now'": driving a boat could, so it is a state; carrying bait couldn't, so it
        /// is a tag.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Tag {
            $( $(#[$tdoc])* $tag, )+
            /// Inside a sub-zone of this kind. One tag per [`SubZone`] kind.
            SubZone(SubZone),
        }

        /// Bit positions of the hand-written tags (sub-zone bits follow them).
        #[derive(Clone, Copy)]
        enum HandBit {
            $( $tag, )+
        }

        impl Tag {
            /// How many hand-written tags exist (the article's nine).
            pub const HAND_WRITTEN_COUNT: usize = [$(stringify!($tag)),+].len();

            /// How many tags exist, including one per sub-zone kind.
            pub const COUNT: usize = Tag::HAND_WRITTEN_COUNT + SubZone::COUNT;

            /// The hand-written tags.
            pub const HAND_WRITTEN: [Tag; Tag::HAND_WRITTEN_COUNT] = [$(Tag::$tag),+];

            /// Every tag: the hand-written ones, then one per sub-zone kind.
            pub const ALL: [Tag; Tag::COUNT] = [$(Tag::$tag,)+ $(Tag::SubZone(SubZone::$zone),)+];

            /// Stable name, e.g. `"UsingBait"` or `"SubZone.Dock"`.
            pub const fn name(self) -> &'static str {
                match self {
                    $( Tag::$tag => stringify!($tag), )+
                    Tag::SubZone(z) => z.name(),
                }
            }

            /// This tag's bit in the machine's tag set.
            pub(crate) const fn bit(self) -> u32 {
                let index = match self {
                    $( Tag::$tag => HandBit::$tag as u32, )+
                    Tag::SubZone(z) => Tag::HAND_WRITTEN_COUNT as u32 + z as u32,
                };
                1 << index
            }
        }

        /// Zero-sized tag marker types, used only as the type parameter of
        /// [`TagHandle`](crate::TagHandle).
        pub mod tag {
            $(
                $(#[$tdoc])*
                #[derive(Debug)]
                pub enum $tag {}

                impl crate::machine::sealed::Sealed for $tag {}

                impl crate::TagKind for $tag {
                    const TAG: crate::Tag = crate::Tag::$tag;
                }
            )+
        }

        /// One writer per hand-written tag, minted once with the machine.
        #[derive(Debug)]
        #[non_exhaustive]
        pub struct TagHandles {
            $(
                #[doc = concat!("The only writer of the `", stringify!($tag), "` tag.")]
                pub $tfield: TagHandle<tag::$tag>,
            )+
        }

        impl TagHandles {
            pub(crate) fn mint() -> Self {
                TagHandles {
                    $( $tfield: TagHandle::mint(), )+
                }
            }
        }
    };
}

tags! {
    hand_written {
        /// Sprinting on foot. Contemplative lines forbid it.
        Sprinting (sprinting),
        /// A fishing rod is equipped.
        FishEquipped (fish_equipped),
        /// Bait is on the hook ("the joke only lands if there is bait to have misused").
        UsingBait (using_bait),
        /// The player has an active objective.
        HasObjective (has_objective),
        /// It is night on the island.
        Night (night),
        /// The story is past the reveal; late-story lines require it.
        PostReveal (post_reveal),
        /// A stacked menu is on screen. Written by the menu bridge, which reflects the UI.
        MenuOpen (menu_open),
        /// The microphone is live: X must not talk over a real person.
        UsingMicrophone (using_microphone),
        /// Away from keyboard. The only tag the server reads (the client reports it).
        Afk (afk),
    }
    sub_zones {
        /// A dock or pier.
        Dock,
        /// A beach.
        Beach,
        /// The market, where fish are sold.
        Market,
        /// Around the lighthouse.
        Lighthouse,
        /// Over a reef.
        Reef,
    }
}

const _: () = assert!(Tag::COUNT <= 32, "the tag set is a u32 bitset");

impl FromStr for Tag {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Tag::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| UnknownName::new(NameKind::Tag, s))
    }
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for SubZone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl From<SubZone> for Tag {
    fn from(z: SubZone) -> Tag {
        Tag::SubZone(z)
    }
}

/// The answer to "what is he doing": the heaviest held state, or `Idle` when none is held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Effective {
    /// No owner holds anything (A(σ) = ∅).
    #[default]
    Idle,
    /// The heaviest held state.
    State(State),
}

impl Effective {
    /// Stable name: `"Idle"` or the state's name.
    pub const fn name(self) -> &'static str {
        match self {
            Effective::Idle => "Idle",
            Effective::State(s) => s.name(),
        }
    }

    /// The state, unless idle.
    pub const fn state(self) -> Option<State> {
        match self {
            Effective::Idle => None,
            Effective::State(s) => Some(s),
        }
    }

    /// Every possible effective value: `Idle`, then every state.
    pub const ALL: [Effective; State::COUNT + 1] = {
        let mut all = [Effective::Idle; State::COUNT + 1];
        let mut i = 0;
        while i < State::COUNT {
            all[i + 1] = Effective::State(State::ALL[i]);
            i += 1;
        }
        all
    };
}

impl From<State> for Effective {
    fn from(s: State) -> Effective {
        Effective::State(s)
    }
}

impl From<Option<State>> for Effective {
    fn from(s: Option<State>) -> Effective {
        match s {
            None => Effective::Idle,
            Some(s) => Effective::State(s),
        }
    }
}

impl FromStr for Effective {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "Idle" {
            return Ok(Effective::Idle);
        }
        s.parse::<State>()
            .map(Effective::State)
            .map_err(|_| UnknownName::new(NameKind::Effective, s))
    }
}

impl fmt::Display for Effective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Something [`PlayerStateMachine::has`](crate::PlayerStateMachine::has) can answer: a state
/// or a tag.
///
/// "Whoever asks shouldn't have to remember which was which": the bark catalog's Require and
/// Forbid lists are lists of facts. State and tag names never collide (states carry their
/// owner's prefix, sub-zone tags carry `SubZone.`), so a fact name is unambiguous.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Fact {
    /// True when the state's owner holds it.
    State(State),
    /// True when the tag is set.
    Tag(Tag),
}

impl Fact {
    /// Stable name: the state's or the tag's.
    pub const fn name(self) -> &'static str {
        match self {
            Fact::State(s) => s.name(),
            Fact::Tag(t) => t.name(),
        }
    }

    /// How many facts exist.
    pub const COUNT: usize = State::COUNT + Tag::COUNT;

    /// Every fact: every state, then every tag.
    pub const ALL: [Fact; Fact::COUNT] = {
        let mut all = [Fact::Tag(Tag::Afk); Fact::COUNT];
        let mut i = 0;
        while i < State::COUNT {
            all[i] = Fact::State(State::ALL[i]);
            i += 1;
        }
        let mut j = 0;
        while j < Tag::COUNT {
            all[State::COUNT + j] = Fact::Tag(Tag::ALL[j]);
            j += 1;
        }
        all
    };
}

impl From<State> for Fact {
    fn from(s: State) -> Fact {
        Fact::State(s)
    }
}

impl From<Tag> for Fact {
    fn from(t: Tag) -> Fact {
        Fact::Tag(t)
    }
}

impl From<SubZone> for Fact {
    fn from(z: SubZone) -> Fact {
        Fact::Tag(Tag::SubZone(z))
    }
}

impl FromStr for Fact {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Ok(state) = s.parse::<State>() {
            return Ok(Fact::State(state));
        }
        s.parse::<Tag>()
            .map(Fact::Tag)
            .map_err(|_| UnknownName::new(NameKind::Fact, s))
    }
}

impl fmt::Display for Fact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Serde by stable name: a catalog or snapshot says `"Fishing.Casted"`, and an unknown name
/// is a deserialization error naming the typo.
macro_rules! serde_by_name {
    ($($ty:ty),+ $(,)?) => {$(
        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.name())
            }
        }

        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                deserializer.deserialize_str(NameVisitor::<$ty>(core::marker::PhantomData))
            }
        }
    )+};
}

struct NameVisitor<T>(core::marker::PhantomData<T>);

impl<T: FromStr<Err = UnknownName>> serde::de::Visitor<'_> for NameVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Banter vocabulary name")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<T, E> {
        v.parse().map_err(E::custom)
    }
}

serde_by_name!(
    Owner,
    State,
    FootState,
    BoatState,
    FishingState,
    StealState,
    DialogueState,
    StoryState,
    Effective,
    Tag,
    SubZone,
    Fact,
);
