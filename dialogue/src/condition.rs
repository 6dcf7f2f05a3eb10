//! The condition language: `Conditions` on nodes and responses, evaluated (the article stores
//! them and never evaluates them; Banter does, on the server authoritatively and on the client
//! against the facts the server sent it).
//!
//! ```text
//! expr     := and ( "||" and )*
//! and      := unary ( "&&" unary )*
//! unary    := "!" unary | atom
//! atom     := "(" expr ")" | "true" | "false"
//!           | "has" "(" NAME ")"                       -- a state or tag: has(PostReveal)
//!           | "quest" "(" NAME ")" ("==" | "!=") STATUS -- quest(MarksColdCall) == active
//!           | value CMP value                           -- coins >= 50, progress(Q, O) < 3
//!           | "$" VAR                                   -- a bool story or derived variable
//!           | "visited" "(" NAME ")"                    -- the line was shown before
//! value    := INTEGER | STRING | "progress" "(" NAME "," NAME ")" | COUNTER
//!           | "$" VAR | "visits" "(" NAME ")"
//! CMP      := "==" | "!=" | "<" | "<=" | ">" | ">="
//! STATUS   := "unavailable" | "available" | "active" | "completed"
//! COUNTER  := "coins" | "experience" | "tutorial_stage" | "opens"
//! NAME     := [A-Za-z_][A-Za-z0-9_.]*
//! VAR      := [A-Za-z_][A-Za-z0-9_]*
//! STRING   := '"' (no '"', backslash or line break)* '"'   -- at most 64 bytes
//! ```
//!
//! Types (a bool variable is a condition, never a value; strings compare only with `==` and
//! `!=`) need the declarations, so [`Condition::type_errors`] checks them apart from parsing.
//!
//! A list of expressions in the content means all of them. Parsing is bounded (length and
//! nesting), so no input can exhaust the stack; evaluation never allocates.

use std::fmt;

/// Longest condition text accepted, in bytes.
pub const MAX_CONDITION_BYTES: usize = 1024;
/// Deepest nesting of parentheses and `!` accepted.
pub const MAX_DEPTH: usize = 32;
/// Longest string literal, and longest string variable value, in bytes.
pub const MAX_STRING_BYTES: usize = 64;

pub use banter_protocol::QuestStatus;
use banter_protocol::{FactSheet, VarValue};

/// The counters a condition may compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Counter {
    Coins,
    Experience,
    TutorialStage,
    /// How many times the player opened this conversation before this time.
    Opens,
}

impl Counter {
    pub const ALL: [Counter; 4] = [
        Counter::Coins,
        Counter::Experience,
        Counter::TutorialStage,
        Counter::Opens,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Counter::Coins => "coins",
            Counter::Experience => "experience",
            Counter::TutorialStage => "tutorial_stage",
            Counter::Opens => "opens",
        }
    }
}

/// A story variable's declared type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VarType {
    Bool,
    Int,
    Text,
}

impl VarType {
    pub const ALL: [VarType; 3] = [VarType::Bool, VarType::Int, VarType::Text];

    /// The name `variables.json` writes.
    pub fn name(self) -> &'static str {
        match self {
            VarType::Bool => "bool",
            VarType::Int => "int",
            VarType::Text => "string",
        }
    }

    /// The type of a value.
    pub fn of(value: &VarValue) -> VarType {
        match value {
            VarValue::Bool(_) => VarType::Bool,
            VarValue::Int(_) => VarType::Int,
            VarValue::Text(_) => VarType::Text,
        }
    }

    /// A `SetVariable` value's text as a value of this type, if it is one: `true`/`false`, a
    /// decimal integer in the 64-bit range, or 1 to 64 bytes of text.
    pub fn parse(self, text: &str) -> Option<VarValue> {
        match self {
            VarType::Bool => match text {
                "true" => Some(VarValue::Bool(true)),
                "false" => Some(VarValue::Bool(false)),
                _ => None,
            },
            VarType::Int => {
                let digits = text.strip_prefix('-').unwrap_or(text);
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                text.parse().ok().map(VarValue::Int)
            }
            VarType::Text => (!text.is_empty() && text.len() <= MAX_STRING_BYTES)
                .then(|| VarValue::Text(text.to_owned())),
        }
    }
}

/// A variable's value, borrowed: what [`Facts::variable`] answers without allocating.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VarRef<'a> {
    Bool(bool),
    Int(i64),
    Text(&'a str),
}

impl<'a> VarRef<'a> {
    pub fn of(value: &'a VarValue) -> VarRef<'a> {
        match value {
            VarValue::Bool(b) => VarRef::Bool(*b),
            VarValue::Int(i) => VarRef::Int(*i),
            VarValue::Text(t) => VarRef::Text(t),
        }
    }

    /// A stored text read as a value of `ty` (`None` if it is not one).
    pub fn parse(ty: VarType, text: &'a str) -> Option<VarRef<'a>> {
        match ty {
            VarType::Bool => match text {
                "true" => Some(VarRef::Bool(true)),
                "false" => Some(VarRef::Bool(false)),
                _ => None,
            },
            VarType::Int => text.parse().ok().map(VarRef::Int),
            VarType::Text => Some(VarRef::Text(text)),
        }
    }

    pub fn to_value(self) -> VarValue {
        match self {
            VarRef::Bool(b) => VarValue::Bool(b),
            VarRef::Int(i) => VarValue::Int(i),
            VarRef::Text(t) => VarValue::Text(t.to_owned()),
        }
    }
}

/// The text a value is stored and paid as (`SetVariable`'s `Value`): the inverse of
/// [`VarType::parse`].
pub fn value_text(value: &VarValue) -> String {
    match value {
        VarValue::Bool(b) => b.to_string(),
        VarValue::Int(i) => i.to_string(),
        VarValue::Text(t) => t.clone(),
    }
}

/// What a condition may ask about the player. The server answers from the profile and the
/// player state machine; a client answers from the facts the server sent it.
pub trait Facts {
    fn quest_status(&self, quest: &str) -> QuestStatus;
    fn objective_progress(&self, quest: &str, objective: &str) -> u32;
    /// A state or a tag by name, as `banter-player` names them (`Fishing.Casted`, `PostReveal`).
    fn has(&self, name: &str) -> bool;
    /// A counter, `opens` (this conversation's) included.
    fn counter(&self, counter: Counter) -> i64;
    /// A story variable's value, if the facts hold one.
    fn variable(&self, _name: &str) -> Option<VarRef<'_>> {
        None
    }
    /// How often the player was shown the line (or picked the response) `vertex` of the
    /// conversation being walked, before this conversation.
    fn visits(&self, _vertex: &str) -> u32 {
        0
    }
    /// When the player last saw the line `vertex` before this conversation, as an ordering
    /// (larger is more recent); `None` if never, or not known.
    fn last_seen(&self, _vertex: &str) -> Option<u64> {
        None
    }
    /// The conversation's seed for `Weighted` groups.
    fn seed(&self) -> u64 {
        0
    }
}

/// The facts the server sent a client: a client evaluates conditions against these.
impl Facts for FactSheet {
    fn quest_status(&self, quest: &str) -> QuestStatus {
        self.quests
            .get(quest)
            .copied()
            .unwrap_or(QuestStatus::Available)
    }
    fn objective_progress(&self, quest: &str, objective: &str) -> u32 {
        // Keys are `quest/objective`; look up without allocating a joined key.
        self.progress
            .iter()
            .find(|(k, _)| {
                k.strip_prefix(quest)
                    .and_then(|rest| rest.strip_prefix('/'))
                    == Some(objective)
            })
            .map_or(0, |(_, v)| *v)
    }
    fn has(&self, name: &str) -> bool {
        self.has.iter().any(|h| h == name)
    }
    fn counter(&self, counter: Counter) -> i64 {
        match counter {
            Counter::Coins => self.coins,
            Counter::Experience => self.experience,
            Counter::TutorialStage => self.tutorial_stage,
            Counter::Opens => i64::from(self.opens),
        }
    }
    fn variable(&self, name: &str) -> Option<VarRef<'_>> {
        self.vars.get(name).map(VarRef::of)
    }
    fn visits(&self, vertex: &str) -> u32 {
        self.visits.get(vertex).copied().unwrap_or(0)
    }
    fn last_seen(&self, vertex: &str) -> Option<u64> {
        self.last_seen.get(vertex).copied()
    }
    fn seed(&self) -> u64 {
        self.seed.unwrap_or(0)
    }
}

/// Facts of a player who has done nothing: every quest available, every count zero.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoFacts;

impl Facts for NoFacts {
    fn quest_status(&self, _: &str) -> QuestStatus {
        QuestStatus::Available
    }
    fn objective_progress(&self, _: &str, _: &str) -> u32 {
        0
    }
    fn has(&self, _: &str) -> bool {
        false
    }
    fn counter(&self, _: Counter) -> i64 {
        0
    }
    fn variable(&self, _: &str) -> Option<VarRef<'_>> {
        None
    }
    fn visits(&self, _: &str) -> u32 {
        0
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparison {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Int(i64),
    Counter(Counter),
    Progress {
        quest: String,
        objective: String,
    },
    /// `"text"`.
    Text(String),
    /// `$Name`: an int or string variable.
    Variable(String),
    /// `visits(Node)`.
    Visits(String),
}

/// A parsed condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Condition {
    Const(bool),
    Not(Box<Condition>),
    All(Vec<Condition>),
    Any(Vec<Condition>),
    Has(String),
    Quest {
        quest: String,
        is: bool,
        status: QuestStatus,
    },
    Compare {
        left: Value,
        op: Comparison,
        right: Value,
    },
    /// `$Name`: a bool variable.
    Variable(String),
    /// `visited(Node)`.
    Visited(String),
}

/// A name a condition refers to, for content checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reference<'a> {
    Fact(&'a str),
    Quest(&'a str),
    Objective {
        quest: &'a str,
        objective: &'a str,
    },
    /// `$Name`, as a condition or a value.
    Variable(&'a str),
    /// `visits(Node)` or `visited(Node)`.
    Visits(&'a str),
}

/// Why a condition does not parse: what and at which byte.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("at byte {position}: {message}")]
pub struct ConditionError {
    pub position: usize,
    pub message: String,
}

impl Condition {
    /// Parses a condition expression.
    pub fn parse(text: &str) -> Result<Condition, ConditionError> {
        if text.len() > MAX_CONDITION_BYTES {
            return Err(ConditionError {
                position: MAX_CONDITION_BYTES,
                message: format!("longer than {MAX_CONDITION_BYTES} bytes"),
            });
        }
        let tokens = tokenize(text)?;
        let mut parser = Parser {
            tokens: &tokens,
            at: 0,
            end: text.len(),
            depth: 0,
        };
        let condition = parser.or()?;
        match parser.peek() {
            None => Ok(condition),
            Some((position, token)) => Err(ConditionError {
                position,
                message: format!("unexpected {token} after the end of the condition"),
            }),
        }
    }

    /// Evaluates against the caller's facts. Never allocates.
    pub fn eval(&self, facts: &dyn Facts) -> bool {
        match self {
            Condition::Const(b) => *b,
            Condition::Not(c) => !c.eval(facts),
            Condition::All(cs) => cs.iter().all(|c| c.eval(facts)),
            Condition::Any(cs) => cs.iter().any(|c| c.eval(facts)),
            Condition::Has(name) => facts.has(name),
            Condition::Quest { quest, is, status } => (facts.quest_status(quest) == *status) == *is,
            Condition::Compare { left, op, right } => {
                match (value(left, facts), value(right, facts)) {
                    (Scalar::Text(l), Scalar::Text(r)) => compare_text(*op, l == r),
                    // An absent variable compared with a string reads as "".
                    (Scalar::Text(t), Scalar::Missing) | (Scalar::Missing, Scalar::Text(t)) => {
                        compare_text(*op, t.is_empty())
                    }
                    (l, r) => match (l.int(), r.int()) {
                        (Some(l), Some(r)) => match op {
                            Comparison::Eq => l == r,
                            Comparison::Ne => l != r,
                            Comparison::Lt => l < r,
                            Comparison::Le => l <= r,
                            Comparison::Gt => l > r,
                            Comparison::Ge => l >= r,
                        },
                        _ => false,
                    },
                }
            }
            Condition::Variable(name) => matches!(facts.variable(name), Some(VarRef::Bool(true))),
            Condition::Visited(vertex) => facts.visits(vertex) > 0,
        }
    }

    /// How many tests the condition makes: each `has`, `quest`, comparison, `$VAR` and
    /// `visited`; `true` and `false` make none. What `MostSpecific` ranks candidates by.
    pub fn tests(&self) -> usize {
        match self {
            Condition::Const(_) => 0,
            Condition::Not(c) => c.tests(),
            Condition::All(cs) | Condition::Any(cs) => cs.iter().map(Condition::tests).sum(),
            Condition::Has(_)
            | Condition::Quest { .. }
            | Condition::Compare { .. }
            | Condition::Variable(_)
            | Condition::Visited(_) => 1,
        }
    }

    /// The type errors of this condition, given each variable's declared type (`None`:
    /// undeclared, reported apart). Each message says what is wrong.
    pub fn type_errors(&self, declared: &dyn Fn(&str) -> Option<VarType>) -> Vec<String> {
        let mut errors = Vec::new();
        self.collect_type_errors(declared, &mut errors);
        errors
    }

    fn collect_type_errors(
        &self,
        declared: &dyn Fn(&str) -> Option<VarType>,
        errors: &mut Vec<String>,
    ) {
        match self {
            Condition::Not(c) => c.collect_type_errors(declared, errors),
            Condition::All(cs) | Condition::Any(cs) => cs
                .iter()
                .for_each(|c| c.collect_type_errors(declared, errors)),
            Condition::Variable(name) => {
                if let Some(t) = declared(name).filter(|t| *t != VarType::Bool) {
                    errors.push(format!(
                        "`${name}` is {} {}, not a condition (compare it: `${name} == ...`)",
                        article(t),
                        t.name()
                    ));
                }
            }
            Condition::Compare { left, op, right } => {
                let type_of = |v: &Value| -> Option<Result<VarType, String>> {
                    match v {
                        Value::Text(_) => Some(Ok(VarType::Text)),
                        Value::Variable(name) => declared(name).map(|t| {
                            if t == VarType::Bool {
                                Err(format!(
                                    "`${name}` is a bool: use it as a condition \
                                     (`${name}`, `!${name}`), not as a value"
                                ))
                            } else {
                                Ok(t)
                            }
                        }),
                        _ => Some(Ok(VarType::Int)),
                    }
                };
                let (l, r) = (type_of(left), type_of(right));
                for side in [&l, &r] {
                    if let Some(Err(e)) = side {
                        errors.push(e.clone());
                    }
                }
                if let (Some(Ok(l)), Some(Ok(r))) = (l, r) {
                    if l != r {
                        errors.push(format!(
                            "compares {} {} with {} {}",
                            article(l),
                            l.name(),
                            article(r),
                            r.name()
                        ));
                    } else if l == VarType::Text && !matches!(op, Comparison::Eq | Comparison::Ne) {
                        errors.push("strings compare only with `==` and `!=`".to_owned());
                    }
                }
            }
            _ => {}
        }
    }

    /// True if the condition can be shown never to hold, whatever the facts: `false`, a
    /// conjunction with a part that never holds, a disjunction all of whose parts never hold,
    /// `X && !X`, or bounds on one integer that no number meets (`coins > 5 && coins < 3`).
    /// False means "not proven", never "satisfiable".
    pub fn provably_false(&self) -> bool {
        match self {
            Condition::Const(b) => !b,
            Condition::Not(c) => c.provably_true(),
            Condition::Any(cs) => cs.iter().all(Condition::provably_false),
            Condition::All(cs) => cs.iter().any(Condition::provably_false) || contradictory(cs),
            _ => false,
        }
    }

    /// True if the condition can be shown always to hold (the dual of
    /// [`Condition::provably_false`]): `true`, `X || !X`, and the like.
    pub fn provably_true(&self) -> bool {
        match self {
            Condition::Const(b) => *b,
            Condition::Not(c) => c.provably_false(),
            Condition::All(cs) => cs.iter().all(Condition::provably_true),
            Condition::Any(cs) => cs.iter().any(Condition::provably_true) || complementary(cs),
            _ => false,
        }
    }

    /// Calls `f` with every name this condition refers to.
    pub fn visit_references<'a>(&'a self, f: &mut dyn FnMut(Reference<'a>)) {
        let visit_value = |v: &'a Value, f: &mut dyn FnMut(Reference<'a>)| match v {
            Value::Progress { quest, objective } => f(Reference::Objective { quest, objective }),
            Value::Variable(name) => f(Reference::Variable(name)),
            Value::Visits(vertex) => f(Reference::Visits(vertex)),
            Value::Int(_) | Value::Counter(_) | Value::Text(_) => {}
        };
        match self {
            Condition::Const(_) => {}
            Condition::Not(c) => c.visit_references(f),
            Condition::All(cs) | Condition::Any(cs) => {
                cs.iter().for_each(|c| c.visit_references(f))
            }
            Condition::Has(name) => f(Reference::Fact(name)),
            Condition::Quest { quest, .. } => f(Reference::Quest(quest)),
            Condition::Compare { left, right, .. } => {
                visit_value(left, f);
                visit_value(right, f);
            }
            Condition::Variable(name) => f(Reference::Variable(name)),
            Condition::Visited(vertex) => f(Reference::Visits(vertex)),
        }
    }
}

fn article(t: VarType) -> &'static str {
    if t == VarType::Int { "an" } else { "a" }
}

/// `==`/`!=` of two strings that are `equal` or not; strings have no order.
fn compare_text(op: Comparison, equal: bool) -> bool {
    match op {
        Comparison::Eq => equal,
        Comparison::Ne => !equal,
        _ => false,
    }
}

/// True if some part of `parts` is the negation of another (`X`, `!X`).
pub(crate) fn complementary(parts: &[Condition]) -> bool {
    parts.iter().any(|c| {
        parts
            .iter()
            .any(|d| matches!(d, Condition::Not(n) if **n == *c))
    })
}

/// True if `parts` (all of which must hold) hold something and its negation, or bounds on one
/// integer value with no number between them.
fn contradictory(parts: &[Condition]) -> bool {
    if complementary(parts) {
        return true;
    }
    // Each `value OP constant` (either way round) narrows that value to [low, high].
    let mut bounds: Vec<(&Value, i128, i128)> = Vec::new();
    for part in parts {
        let Condition::Compare { left, op, right } = part else {
            continue;
        };
        let is_int_value = |v: &Value| !matches!(v, Value::Int(_) | Value::Text(_));
        let (value, op, constant) = match (left, right) {
            (v, Value::Int(c)) if is_int_value(v) => (v, *op, *c),
            (Value::Int(c), v) if is_int_value(v) => {
                let flipped = match op {
                    Comparison::Lt => Comparison::Gt,
                    Comparison::Le => Comparison::Ge,
                    Comparison::Gt => Comparison::Lt,
                    Comparison::Ge => Comparison::Le,
                    other => *other,
                };
                (v, flipped, *c)
            }
            _ => continue,
        };
        let c = i128::from(constant);
        let (low, high) = match op {
            Comparison::Eq => (c, c),
            Comparison::Lt => (i128::MIN, c - 1),
            Comparison::Le => (i128::MIN, c),
            Comparison::Gt => (c + 1, i128::MAX),
            Comparison::Ge => (c, i128::MAX),
            Comparison::Ne => continue,
        };
        match bounds.iter_mut().find(|(v, _, _)| *v == value) {
            Some((_, l, h)) => {
                *l = (*l).max(low);
                *h = (*h).min(high);
            }
            None => bounds.push((value, low, high)),
        }
    }
    bounds.iter().any(|(_, low, high)| low > high)
}

/// A value as evaluated: an integer, a string, or a variable the facts do not hold.
enum Scalar<'a> {
    Int(i64),
    Text(&'a str),
    Missing,
}

impl Scalar<'_> {
    /// As an integer; an absent variable reads as 0.
    fn int(&self) -> Option<i64> {
        match self {
            Scalar::Int(i) => Some(*i),
            Scalar::Missing => Some(0),
            Scalar::Text(_) => None,
        }
    }
}

fn value<'a>(v: &'a Value, facts: &'a dyn Facts) -> Scalar<'a> {
    match v {
        Value::Int(i) => Scalar::Int(*i),
        Value::Counter(c) => Scalar::Int(facts.counter(*c)),
        Value::Progress { quest, objective } => {
            Scalar::Int(i64::from(facts.objective_progress(quest, objective)))
        }
        Value::Text(t) => Scalar::Text(t),
        Value::Variable(name) => match facts.variable(name) {
            Some(VarRef::Int(i)) => Scalar::Int(i),
            Some(VarRef::Text(t)) => Scalar::Text(t),
            // A bool is not a value (the type check refuses it); absent reads as zero.
            Some(VarRef::Bool(_)) | None => Scalar::Missing,
        },
        Value::Visits(vertex) => Scalar::Int(i64::from(facts.visits(vertex))),
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Name(String),
    Int(i64),
    Op(&'static str),
    /// `$Name`.
    Var(String),
    /// `"text"`.
    Text(String),
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Token::Name(n) => write!(f, "`{n}`"),
            Token::Int(i) => write!(f, "`{i}`"),
            Token::Op(o) => write!(f, "`{o}`"),
            Token::Var(n) => write!(f, "`${n}`"),
            Token::Text(t) => write!(f, "`\"{t}\"`"),
        }
    }
}

/// The comparison operators, longest first.
const COMPARISON_OPS: [(&str, Comparison); 6] = [
    ("==", Comparison::Eq),
    ("!=", Comparison::Ne),
    ("<=", Comparison::Le),
    (">=", Comparison::Ge),
    ("<", Comparison::Lt),
    (">", Comparison::Gt),
];

const OPERATORS: [&str; 12] = [
    "&&", "||", "==", "!=", "<=", ">=", "<", ">", "!", "(", ")", ",",
];

fn tokenize(text: &str) -> Result<Vec<(usize, Token)>, ConditionError> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] == b'.')
            {
                i += 1;
            }
            tokens.push((start, Token::Name(text[start..i].to_owned())));
        } else if c.is_ascii_digit() || c == b'-' {
            // An integer: an optional `-` directly followed by decimal digits (leading zeros
            // allowed), within the 64-bit signed range. A `-` not followed at once by a digit
            // (`- 5`, `--5`) is an error: the language has no subtraction.
            let start = i;
            i += usize::from(c == b'-');
            let digits = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            if i == digits {
                return Err(ConditionError {
                    position: start,
                    message: "a `-` must be followed at once by a digit".to_owned(),
                });
            }
            let n = text[start..i].parse::<i64>().map_err(|_| ConditionError {
                position: start,
                message: format!(
                    "number out of the 64-bit signed range ({} to {})",
                    i64::MIN,
                    i64::MAX
                ),
            })?;
            tokens.push((start, Token::Int(n)));
        } else if c == b'$' {
            // A variable: `$` then at once a name of letters, digits and `_`.
            let start = i;
            i += 1;
            let name_start = i;
            if i < bytes.len() && (bytes[i].is_ascii_alphabetic() || bytes[i] == b'_') {
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
            }
            if i == name_start {
                return Err(ConditionError {
                    position: start,
                    message: "a `$` must be followed at once by a variable name".to_owned(),
                });
            }
            tokens.push((start, Token::Var(text[name_start..i].to_owned())));
        } else if c == b'"' {
            // A string: everything up to the next `"`, with no backslash or line break inside.
            let start = i;
            i += 1;
            let body = i;
            while i < bytes.len() && !matches!(bytes[i], b'"' | b'\\' | b'\n' | b'\r') {
                i += 1;
            }
            if i >= bytes.len() || bytes[i] != b'"' {
                return Err(ConditionError {
                    position: start,
                    message: "a string must end with `\"` on its line, with no `\\` inside"
                        .to_owned(),
                });
            }
            if i - body > MAX_STRING_BYTES {
                return Err(ConditionError {
                    position: start,
                    message: format!("a string is at most {MAX_STRING_BYTES} bytes"),
                });
            }
            tokens.push((start, Token::Text(text[body..i].to_owned())));
            i += 1;
        } else if let Some(op) = OPERATORS.iter().find(|op| text[i..].starts_with(**op)) {
            tokens.push((i, Token::Op(op)));
            i += op.len();
        } else {
            let ch = text[i..].chars().next().unwrap_or('?');
            return Err(ConditionError {
                position: i,
                message: format!("unexpected character `{ch}`"),
            });
        }
    }
    Ok(tokens)
}

struct Parser<'a> {
    tokens: &'a [(usize, Token)],
    at: usize,
    end: usize,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<(usize, &Token)> {
        self.tokens.get(self.at).map(|(p, t)| (*p, t))
    }

    fn position(&self) -> usize {
        self.peek().map_or(self.end, |(p, _)| p)
    }

    fn fail<T>(&self, message: impl Into<String>) -> Result<T, ConditionError> {
        Err(ConditionError {
            position: self.position(),
            message: message.into(),
        })
    }

    fn eat_op(&mut self, op: &str) -> bool {
        if matches!(self.peek(), Some((_, Token::Op(o))) if *o == op) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    /// The arguments of a call such as `has(...)`, read by `inside`: past the function's name,
    /// then its parentheses around them.
    fn arguments<T>(
        &mut self,
        inside: impl FnOnce(&mut Self) -> Result<T, ConditionError>,
    ) -> Result<T, ConditionError> {
        self.at += 1;
        self.expect_op("(")?;
        let arguments = inside(self)?;
        self.expect_op(")")?;
        Ok(arguments)
    }

    fn expect_op(&mut self, op: &str) -> Result<(), ConditionError> {
        if self.eat_op(op) {
            Ok(())
        } else {
            let found = self
                .peek()
                .map_or("the end".to_owned(), |(_, t)| t.to_string());
            self.fail(format!("expected `{op}`, found {found}"))
        }
    }

    fn name(&mut self, what: &str) -> Result<String, ConditionError> {
        match self.peek() {
            Some((_, Token::Name(n))) => {
                let n = n.clone();
                self.at += 1;
                Ok(n)
            }
            _ => self.fail(format!("expected {what}")),
        }
    }

    /// True if the token after the current one is a comparison operator.
    fn comparison_after_next(&self) -> bool {
        matches!(self.tokens.get(self.at + 1), Some((_, Token::Op(o))) if COMPARISON_OPS.iter().any(|(c, _)| c == o))
    }

    fn enter(&mut self) -> Result<(), ConditionError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return self.fail(format!("nested deeper than {MAX_DEPTH}"));
        }
        Ok(())
    }

    fn or(&mut self) -> Result<Condition, ConditionError> {
        self.joined("||", Self::and, Condition::Any)
    }

    fn and(&mut self) -> Result<Condition, ConditionError> {
        self.joined("&&", Self::unary, Condition::All)
    }

    /// One or more operands (each read by `operand`) between `op`s: a lone one as it is, more
    /// made one by `join`.
    fn joined(
        &mut self,
        op: &str,
        operand: fn(&mut Self) -> Result<Condition, ConditionError>,
        join: fn(Vec<Condition>) -> Condition,
    ) -> Result<Condition, ConditionError> {
        let mut parts = vec![operand(self)?];
        while self.eat_op(op) {
            parts.push(operand(self)?);
        }
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            join(parts)
        })
    }

    fn unary(&mut self) -> Result<Condition, ConditionError> {
        if self.eat_op("!") {
            self.enter()?;
            let inner = self.unary()?;
            self.depth -= 1;
            return Ok(Condition::Not(Box::new(inner)));
        }
        self.atom()
    }

    fn atom(&mut self) -> Result<Condition, ConditionError> {
        if self.eat_op("(") {
            self.enter()?;
            let inner = self.or()?;
            self.expect_op(")")?;
            self.depth -= 1;
            return Ok(inner);
        }
        match self.peek() {
            Some((_, Token::Name(n))) if n == "true" || n == "false" => {
                let b = n == "true";
                self.at += 1;
                Ok(Condition::Const(b))
            }
            Some((_, Token::Name(n))) if n == "has" => {
                let name = self.arguments(|p| p.name("a state or tag name"))?;
                Ok(Condition::Has(name))
            }
            Some((_, Token::Name(n))) if n == "visited" => {
                let name = self.arguments(|p| p.name("a line or response name"))?;
                Ok(Condition::Visited(name))
            }
            // A variable alone is a condition (a bool); followed by a comparison, a value.
            Some((_, Token::Var(n))) if !self.comparison_after_next() => {
                let name = n.clone();
                self.at += 1;
                Ok(Condition::Variable(name))
            }
            Some((_, Token::Name(n))) if n == "quest" => {
                let quest = self.arguments(|p| p.name("a quest id"))?;
                let is = if self.eat_op("==") {
                    true
                } else if self.eat_op("!=") {
                    false
                } else {
                    return self.fail("expected `==` or `!=` after quest(...)");
                };
                let position = self.position();
                let word = self.name("a quest status")?;
                let status = one_named(
                    QuestStatus::ALL,
                    QuestStatus::name,
                    &word,
                    position,
                    || {
                        format!(
                            "unknown quest status `{word}` (unavailable, available, active, completed)"
                        )
                    },
                )?;
                Ok(Condition::Quest { quest, is, status })
            }
            _ => {
                let left = self.value()?;
                let op = COMPARISON_OPS
                    .into_iter()
                    .find(|(op, _)| self.eat_op(op))
                    .map(|(_, c)| c);
                let Some(op) = op else {
                    return self.fail("expected a comparison (`==`, `!=`, `<`, `<=`, `>`, `>=`)");
                };
                let right = self.value()?;
                Ok(Condition::Compare { left, op, right })
            }
        }
    }

    fn value(&mut self) -> Result<Value, ConditionError> {
        match self.peek() {
            Some((_, Token::Int(i))) => {
                let i = *i;
                self.at += 1;
                Ok(Value::Int(i))
            }
            Some((_, Token::Var(n))) => {
                let name = n.clone();
                self.at += 1;
                Ok(Value::Variable(name))
            }
            Some((_, Token::Text(t))) => {
                let text = t.clone();
                self.at += 1;
                Ok(Value::Text(text))
            }
            Some((_, Token::Name(n))) if n == "visits" => {
                let name = self.arguments(|p| p.name("a line or response name"))?;
                Ok(Value::Visits(name))
            }
            Some((_, Token::Name(n))) if n == "progress" => {
                let (quest, objective) = self.arguments(|p| {
                    let quest = p.name("a quest id")?;
                    p.expect_op(",")?;
                    Ok((quest, p.name("an objective id")?))
                })?;
                Ok(Value::Progress { quest, objective })
            }
            Some((position, Token::Name(n))) => {
                let counter = one_named(Counter::ALL, Counter::name, n, position, || {
                    format!(
                        "unknown name `{n}` (counters: coins, experience, tutorial_stage, \
                         opens; use has(...) for states and tags, $Name for variables)"
                    )
                })?;
                self.at += 1;
                Ok(Value::Counter(counter))
            }
            _ => self.fail("expected a value"),
        }
    }
}

/// The one of `all` whose `name` is `word`, else an error at `position` with the message
/// `unknown` writes.
fn one_named<T: Copy, const N: usize>(
    all: [T; N],
    name: fn(T) -> &'static str,
    word: &str,
    position: usize,
    unknown: impl FnOnce() -> String,
) -> Result<T, ConditionError> {
    all.into_iter()
        .find(|t| name(*t) == word)
        .ok_or_else(|| ConditionError {
            position,
            message: unknown(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Player {
        coins: i64,
        tags: &'static [&'static str],
    }

    impl Facts for Player {
        fn quest_status(&self, quest: &str) -> QuestStatus {
            if quest == "Done" {
                QuestStatus::Completed
            } else {
                QuestStatus::Active
            }
        }
        fn objective_progress(&self, _: &str, objective: &str) -> u32 {
            if objective == "Fish" { 3 } else { 0 }
        }
        fn has(&self, name: &str) -> bool {
            self.tags.contains(&name)
        }
        fn counter(&self, c: Counter) -> i64 {
            match c {
                Counter::Coins => self.coins,
                _ => 0,
            }
        }
    }

    fn eval(text: &str) -> bool {
        let p = Player {
            coins: 50,
            tags: &["PostReveal", "Fishing.Casted"],
        };
        Condition::parse(text)
            .unwrap_or_else(|e| panic!("{text}: {e}"))
            .eval(&p)
    }

    #[test]
    fn evaluates_every_form() {
        assert!(eval("true"));
        assert!(!eval("false"));
        assert!(eval("has(PostReveal) && has(Fishing.Casted)"));
        assert!(!eval("!has(PostReveal)"));
        assert!(eval(
            "quest(Done) == completed && quest(Other) != completed"
        ));
        assert!(eval(
            "coins >= 50 && coins < 51 && coins == 50 && coins != -1"
        ));
        assert!(eval("progress(Q, Fish) > 2 || false"));
        assert!(eval("(false || true) && !(false)"));
        assert!(!eval("coins > 50 || has(Night)"));
    }

    #[test]
    fn errors_say_what_and_where() {
        let e = Condition::parse("coins >= ").expect_err("refused");
        assert_eq!(e.position, 9);
        let e = Condition::parse("gold > 3").expect_err("refused");
        assert!(e.message.contains("unknown name `gold`"), "{e}");
        let e = Condition::parse("quest(Q) == finished").expect_err("refused");
        assert!(e.message.contains("unknown quest status"), "{e}");
        let e = Condition::parse("has(A) has(B)").expect_err("refused");
        assert_eq!(e.position, 7);
        assert!(Condition::parse("coins > 99999999999999999999").is_err());
        assert!(Condition::parse("has(A) @").is_err());
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = format!("{}true{}", "(".repeat(10_000), ")".repeat(10_000));
        assert!(Condition::parse(&deep).is_err());
        let nots = format!("{}true", "!".repeat(500));
        assert!(Condition::parse(&nots).is_err());
        let ok = format!("{}true{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
        assert!(Condition::parse(&ok).is_ok());
    }
}
