//! Actions authored on dialogue nodes and responses (article section 2 and 7.3).
//!
//! Every action type is declared once, in the [`actions!`] invocation below: its name, its
//! fields (the content key, the Rust field and the field's kind), their payload order, whether
//! running it changes the player's stored state, and where content may put it. From that one
//! table come [`ActionType`], [`Action`], [`ACTION_SPECS`], the payload build and parse
//! (`payload.rs`), the content readers and writer (banter-dialogue's `json.rs` and
//! `canonical.rs`), the server's store-changing classification, and `docs/schema/actions.json`
//! (from which the TypeScript client's tables are generated). ARCHITECTURE.md says how to add
//! one.

use std::str::FromStr;

use serde::{Deserialize, Serialize};
use strum::{EnumCount, VariantArray};

/// How far an `AdvanceObjective` moves its objective, and optionally on which island.
///
/// The article encodes the amount and the island positionally, so naming an island forces the
/// amount to be written even when it is 1. Making the island live *inside* the amount means an
/// island without an amount cannot be represented at all.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ObjectiveAmount {
    pub amount: u32,
    pub island: Option<String>,
}

/// The kind of one action field: its Rust type, how content writes it and how the payload
/// carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldKind {
    /// A non-empty identifier content must give (`String`); one payload field.
    Ident,
    /// A non-empty identifier content may leave out (`String`, empty when left out, which the
    /// content check reports); one payload field, always written, empty when left out.
    Target,
    /// A non-empty identifier content may leave out (`Option<String>`); when given, one
    /// trailing payload field.
    OptionalIdent,
    /// A whole number from 1 to `u32::MAX` under the first key and an optional identifier under
    /// the second (`Option<ObjectiveAmount>`); when either is given, a trailing payload field
    /// with the amount (1 when only the identifier is given), then one with the identifier if
    /// given.
    Amount,
}

impl FieldKind {
    /// The name used in `docs/schema/actions.json`.
    pub fn name(self) -> &'static str {
        match self {
            FieldKind::Ident => "ident",
            FieldKind::Target => "target",
            FieldKind::OptionalIdent => "optional_ident",
            FieldKind::Amount => "amount",
        }
    }

    /// How many payload fields this field may take: (at least, at most).
    pub fn payload_slots(self) -> (usize, usize) {
        match self {
            FieldKind::Ident | FieldKind::Target => (1, 1),
            FieldKind::OptionalIdent => (0, 1),
            FieldKind::Amount => (0, 2),
        }
    }

    /// True if the field may be left out of the payload (an optional tail).
    pub fn is_tail(self) -> bool {
        self.payload_slots().0 == 0
    }
}

/// Where content may put an action.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Placement {
    /// On an NPC line (sent when the line is shown) or on a response (sent when it is picked).
    NodeOrResponse,
    /// On NPC lines only.
    Node,
    /// On responses only.
    Response,
}

impl Placement {
    /// The name used in `docs/schema/actions.json`.
    pub fn name(self) -> &'static str {
        match self {
            Placement::NodeOrResponse => "node_or_response",
            Placement::Node => "node",
            Placement::Response => "response",
        }
    }
}

/// One field of an action type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FieldSpec {
    /// The Rust field name of the [`Action`] variant.
    pub rust: &'static str,
    /// Its kind.
    pub kind: FieldKind,
    /// The content keys, in order: one, or two for [`FieldKind::Amount`] (amount, identifier).
    pub keys: &'static [&'static str],
}

impl FieldSpec {
    /// The first content key.
    pub fn key(&self) -> &'static str {
        self.keys[0]
    }
}

/// One action type, as declared in the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ActionSpec {
    pub action_type: ActionType,
    /// What it does (the variant's doc comment).
    pub doc: &'static str,
    /// Its fields, in payload order.
    pub fields: &'static [FieldSpec],
    /// Running it changes the player's stored state (a store step with its own audit row).
    pub changes_store: bool,
    /// Where content may put it.
    pub placement: Placement,
}

impl ActionSpec {
    /// Every content key the action takes besides `Type`, in order.
    pub fn content_keys(&self) -> impl Iterator<Item = &'static str> + use<> {
        self.fields.iter().flat_map(|f| f.keys.iter().copied())
    }

    /// How many payload fields a canonical payload has: (at least, at most).
    pub fn payload_fields(&self) -> (usize, usize) {
        self.fields.iter().fold((0, 0), |(lo, hi), f| {
            let (a, b) = f.kind.payload_slots();
            (lo + a, hi + b)
        })
    }
}

/// A field's value, borrowed from an [`Action`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldRef<'a> {
    /// [`FieldKind::Ident`] and [`FieldKind::Target`].
    Text(&'a str),
    /// [`FieldKind::OptionalIdent`].
    Maybe(Option<&'a str>),
    /// [`FieldKind::Amount`].
    Amount(Option<&'a ObjectiveAmount>),
}

/// A field's value, owned, to build an [`Action`] with [`Action::from_fields`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldValue {
    Text(String),
    Maybe(Option<String>),
    Amount(Option<ObjectiveAmount>),
}

/// The Rust types an action field may have.
pub trait ActionField: Sized {
    fn field_ref(&self) -> FieldRef<'_>;
    fn from_value(value: FieldValue) -> Option<Self>;
}

/// Implements [`ActionField`] for `$ty`, the `$variant` of [`FieldValue`] and [`FieldRef`]; the
/// borrowed form is `$field` (a `&$ty`) after `$borrow`.
macro_rules! action_field {
    ($ty:ty, $variant:ident, |$field:ident| $borrow:expr) => {
        impl ActionField for $ty {
            fn field_ref(&self) -> FieldRef<'_> {
                let $field = self;
                FieldRef::$variant($borrow)
            }
            fn from_value(value: FieldValue) -> Option<Self> {
                match value {
                    FieldValue::$variant(v) => Some(v),
                    _ => None,
                }
            }
        }
    };
}

action_field!(String, Text, |s| s);
action_field!(Option<String>, Maybe, |s| s.as_deref());
action_field!(Option<ObjectiveAmount>, Amount, |a| a.as_ref());

/// The Rust type of a field kind.
macro_rules! field_type {
    (Ident) => { String };
    (Target) => { String };
    (OptionalIdent) => { Option<String> };
    (Amount) => { Option<ObjectiveAmount> };
}

/// Declares every action type. One entry per type:
///
/// ```text
/// /// What it does.
/// Name(changes_store: bool, placement: Placement) { rust_field: Kind("ContentKey"), ... }
/// ```
///
/// Fields are listed in payload order; a field of a tail kind (`OptionalIdent`, `Amount`) may
/// only be the last one. A type without fields leaves out the braces.
macro_rules! actions {
    ($(
        $(#[doc = $doc:literal])*
        $name:ident ($changes_store:literal, $placement:ident)
        $({ $($field:ident : $kind:ident ( $($key:literal),+ )),* $(,)? })?
    )*) => {
        /// The closed vocabulary of action types. The string form is the `Type` field of the content
        /// files and the `action` field of the wire message.
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
            schemars::JsonSchema,
            strum::IntoStaticStr,
            strum::Display,
            strum::VariantArray,
            strum::EnumCount,
        )]
        pub enum ActionType {
            $($name,)*
        }

        /// An action as authored in a dialogue, with every field the content gave it.
        #[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(tag = "Type", rename_all_fields = "PascalCase")]
        pub enum Action {
            $(
                $(#[doc = $doc])*
                $name $({ $($field: field_type!($kind)),* })?,
            )*
        }

        /// Every action type's declaration, in [`ActionType::ALL`] order.
        pub static ACTION_SPECS: [ActionSpec; ActionType::COUNT] = [$(
            ActionSpec {
                action_type: ActionType::$name,
                doc: concat!($($doc, "\n",)*),
                fields: &[$($(FieldSpec {
                    rust: stringify!($field),
                    kind: FieldKind::$kind,
                    keys: &[$($key),+],
                }),*)?],
                changes_store: $changes_store,
                placement: Placement::$placement,
            },
        )*];

        impl Action {
            /// The type of this action.
            pub fn action_type(&self) -> ActionType {
                match self {
                    $(Action::$name { .. } => ActionType::$name,)*
                }
            }

            /// Calls `f` with each field's declaration and value, in payload order.
            pub fn for_each_field<'a>(&'a self, mut f: impl FnMut(&'static FieldSpec, FieldRef<'a>)) {
                let specs = self.action_type().spec().fields.iter();
                match self {
                    $(Action::$name $({ $($field),* })? => {
                        let mut _specs = specs;
                        $($(
                            if let Some(spec) = _specs.next() {
                                f(spec, ActionField::field_ref($field));
                            }
                        )*)?
                    })*
                }
            }

            /// The action of type `action_type` with these field values, in payload order;
            /// `None` if they are not the values that type takes.
            pub fn from_fields(action_type: ActionType, values: Vec<FieldValue>) -> Option<Action> {
                let mut _values = values.into_iter();
                let action = match action_type {
                    $(ActionType::$name => Action::$name $({ $(
                        $field: ActionField::from_value(_values.next()?)?
                    ),* })?,)*
                };
                _values.next().is_none().then_some(action)
            }
        }
    };
}

actions! {
    /// The player takes on a quest.
    AcceptQuest(true, NodeOrResponse) { quest_id: Ident("QuestId") }
    /// The server checks the quest's objectives and jumps to `success_node` or `failure_node`.
    CheckQuest(false, NodeOrResponse) {
        quest_id: Ident("QuestId"),
        success_node: Target("SuccessNode"),
        failure_node: Target("FailureNode"),
    }
    /// The quest is handed in and its reward paid.
    CompleteQuest(true, NodeOrResponse) { quest_id: Ident("QuestId") }
    /// A talk-only objective moves forward.
    AdvanceObjective(true, NodeOrResponse) {
        quest_id: Ident("QuestId"),
        objective_id: Ident("ObjectiveId"),
        amount: Amount("Amount", "Island"),
    }
    /// The quest becomes the one followed in the journal.
    TrackQuest(true, NodeOrResponse) { quest_id: Ident("QuestId") }
    /// A shop opens on the client.
    OpenShop(false, NodeOrResponse) { shop: Ident("Shop") }
    /// The selling menu opens on the client.
    OpenSellMenu(false, NodeOrResponse)
    /// A cutscene plays, optionally for a quest.
    PlayCutscene(false, NodeOrResponse) {
        scene: Ident("Scene"),
        quest_id: OptionalIdent("QuestId"),
    }
    /// The player is sent to pick a boat for a trip.
    ChooseRideBoat(false, NodeOrResponse) { quest_id: Ident("QuestId") }
    /// A story variable takes a value (CONTENT.md "Story variables"): `true`/`false`, a decimal
    /// integer or the text, as the variable's declared type says.
    SetVariable(true, NodeOrResponse) {
        variable: Ident("Variable"),
        value: Ident("Value"),
    }
}

impl ActionType {
    /// Every action type, in declaration order.
    pub const ALL: [ActionType; ActionType::COUNT] = crate::all(ActionType::VARIANTS);

    /// The name used in content files and on the wire: the variant's own name.
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// This type's declaration.
    pub fn spec(self) -> &'static ActionSpec {
        &ACTION_SPECS[self as usize]
    }

    /// True if running an action of this type changes the player's stored state.
    pub fn changes_store(self) -> bool {
        self.spec().changes_store
    }

    /// Where content may put an action of this type.
    pub fn placement(self) -> Placement {
        self.spec().placement
    }
}

/// A name that is not one of [`ActionType::ALL`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown action type `{0}`")]
pub struct UnknownActionType(pub String);

impl FromStr for ActionType {
    type Err = UnknownActionType;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ActionType::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| UnknownActionType(s.to_owned()))
    }
}

impl Action {
    /// True if running this action changes the player's stored state.
    pub fn changes_store(&self) -> bool {
        self.action_type().changes_store()
    }

    /// The quest this action is about, if any: its `QuestId` field.
    pub fn quest_id(&self) -> Option<&str> {
        let mut found = None;
        self.for_each_field(|spec, value| {
            if spec.key() == "QuestId" {
                found = match value {
                    FieldRef::Text(q) => Some(q),
                    FieldRef::Maybe(q) => q,
                    FieldRef::Amount(_) => None,
                };
            }
        });
        found
    }
}

/// The action table as `docs/schema/actions.json` writes it, for clients generated from it.
pub fn actions_json() -> String {
    use serde_json::{Value, json};
    let actions: Vec<Value> = ACTION_SPECS
        .iter()
        .map(|spec| {
            let (min, max) = spec.payload_fields();
            json!({
                "name": spec.action_type.name(),
                "doc": spec.doc.split('\n').map(str::trim).filter(|l| !l.is_empty())
                    .collect::<Vec<_>>().join(" "),
                "changes_store": spec.changes_store,
                "placement": spec.placement.name(),
                "payload_fields": { "min": min, "max": max },
                "fields": spec.fields.iter().map(|f| json!({
                    "rust": f.rust,
                    "kind": f.kind.name(),
                    "keys": f.keys,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let doc = json!({
        "$comment": "GENERATED from the actions! table in protocol/src/action.rs; do not edit. \
            Regenerate with `BANTER_BLESS=1 cargo test -p banter-protocol --test schema`.",
        "max_amount": u32::MAX,
        "kinds": {
            "ident": "a non-empty identifier content must give; one payload field",
            "target": "a non-empty identifier content may leave out; one payload field, always written, empty when left out",
            "optional_ident": "a non-empty identifier content may leave out; when given, one trailing payload field",
            "amount": "keys[0] a whole number from 1 to max_amount, keys[1] an optional non-empty identifier; when either is given, a trailing payload field with the amount (1 if only keys[1] is given), then keys[1] if given",
        },
        "actions": actions,
    });
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_declaration_order_and_tails_are_last() {
        for (i, spec) in ACTION_SPECS.iter().enumerate() {
            assert_eq!(spec.action_type, ActionType::ALL[i]);
            let tails = spec.fields.iter().filter(|f| f.kind.is_tail()).count();
            assert!(
                tails <= 1,
                "{}: at most one optional tail",
                spec.action_type
            );
            if tails == 1 {
                assert!(
                    spec.fields.last().is_some_and(|f| f.kind.is_tail()),
                    "{}: the optional tail is the last field",
                    spec.action_type
                );
            }
            for f in spec.fields {
                let expected = if f.kind == FieldKind::Amount { 2 } else { 1 };
                assert_eq!(f.keys.len(), expected, "{}.{}", spec.action_type, f.rust);
            }
        }
    }
}
