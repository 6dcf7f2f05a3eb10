//! Diagnostics: every problem found in content, typed, and located by file, node and field.
//!
//! A diagnostic is data, not a log line: loaders and checks return them, callers decide what to
//! print and whether to refuse the content. The display form is one line, as `check-content`
//! prints it: `error: content/dialogue/base/Mara.json: node `Greet`, field `NextNode`: ...`.

use std::fmt;

/// How bad a problem is. Errors make content unusable; warnings are for a writer to look at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Warning,
    Error,
}

/// A line and column in a file, both 1-based, as editors count them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

/// What is wrong. One variant per kind of problem, so tests and tools can match on it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    // Reading and parsing.
    /// A file every content folder needs is not there; the reason says what it holds.
    #[error("the file is missing: {0}")]
    MissingFile(String),
    #[error("cannot read the file: {0}")]
    Unreadable(String),
    #[error("the file is {size} bytes, over the {limit}-byte limit for one content file")]
    TooLarge { size: u64, limit: u64 },
    #[error("the file is not valid UTF-8")]
    NotUtf8,
    #[error("the file is empty")]
    Empty,
    #[error("malformed JSON: {0}")]
    Syntax(String),
    #[error("expected {expected}, found {found}")]
    WrongType {
        expected: &'static str,
        found: &'static str,
    },
    #[error("unknown field `{0}`")]
    UnknownField(String),
    #[error("this line has text and no `LineId`: run `banter-server strings tag` to add one")]
    MissingLineId,
    #[error("line id `{id}` is also used at {first}: every line needs its own")]
    DuplicateLineId { id: String, first: String },
    #[error("cannot read the string table: {0}")]
    BadTable(String),
    #[error("no line of the content has id `{0}`")]
    UnknownLine(String),
    #[error("`{0}` was translated from an older source text (or is marked fuzzy)")]
    StaleTranslation(String),
    #[error(
        "tags differ from the source: source has [{original}], translation has [{translation}]"
    )]
    TranslationTags {
        original: String,
        translation: String,
    },
    #[error(
        "placeholders differ from the source: source has [{original}], translation has [{translation}]"
    )]
    TranslationPlaceholders {
        original: String,
        translation: String,
    },
    #[error("the translation draws {length} graphemes, over its limit of {limit}")]
    TranslationTooLong { length: usize, limit: usize },
    #[error("missing field `{0}`")]
    MissingField(&'static str),
    #[error("the name `{0}` appears twice")]
    Duplicate(String),
    #[error("`{0}` may not be empty")]
    EmptyValue(&'static str),
    #[error("a node has at most one exit, found {0}")]
    SeveralExits(String),
    #[error("{0}")]
    BadAction(String),
    #[error("condition: {0}")]
    BadCondition(String),
    #[error("group: {0}")]
    BadGroup(String),
    #[error("variables: {0}")]
    VariableDeclaration(String),
    #[error("undeclared variable `{0}` (declare it in variables.json)")]
    UndeclaredVariable(String),
    #[error("type error: {0}")]
    VariableType(String),
    #[error("derived variables form a cycle: {0}")]
    DerivedCycle(String),
    #[error("`{0}` is read-only: content may read it, never set it")]
    ReadOnlyFact(String),
    #[error("`{0}` is not a line or response of this conversation")]
    UnknownVisited(String),
    #[error("empty group: {0}")]
    EmptyGroup(String),
    #[error("soft lock: {0}")]
    SoftLock(String),
    #[error("unknown format `{0}`")]
    UnknownFormat(String),

    // Structure.
    #[error("the conversation has no FirstNode")]
    NoFirstNode,
    #[error("no node named `{0}`; the edge is skipped")]
    Dangling(String),
    #[error("editor id {id} names no node; resolved by the name `{name}`")]
    StaleEditorId { id: i64, name: String },
    #[error("a patch node needs a node of the same name in a lower layer")]
    PatchOfNothing,
    #[error("nodes {0} form a NextNode cycle with no way out")]
    EndlessCycle(String),
    #[error("{action} names unknown {what} `{name}`")]
    UnknownReference {
        action: &'static str,
        what: &'static str,
        name: String,
    },
    #[error("CheckQuest needs both SuccessNode and FailureNode")]
    CheckQuestTargets,

    // Shared conversations (docs/CONTENT.md, "Shared conversations").
    #[error("unknown value `{value}`: expected {expected}")]
    UnknownValue {
        value: String,
        expected: &'static str,
    },
    #[error("`TimeLimit` must be a whole number of seconds from 1 to 600, found {0}")]
    BadTimeLimit(String),
    #[error(
        "`TimeLimit` does nothing with `Mode` `{0}`: only `Majority` and `Roll` wait for a time limit{1}"
    )]
    TimeLimitWithoutTimer(&'static str, &'static str),
    #[error("`Tie` only breaks a `Majority` tie; `Mode` is `{0}`{1}")]
    TieWithoutMajority(&'static str, &'static str),
    #[error("a node's `Choice` needs a shared conversation: its base file says no `Shared`")]
    ChoiceNotShared,
    #[error("`Choice` on a node without responses: there is nothing to choose")]
    ChoiceWithoutResponses,
    #[error("only the base file may say `Shared`; this {0} layer's is ignored")]
    SharedInLayer(String),
    #[error(
        "in a shared conversation a response with `Conditions` may not carry `CheckQuest`: the group waits for the leader's check, which the leader may not be shown"
    )]
    ConditionalCheckInShared,

    // Warnings.
    #[error("unreachable from every entry point")]
    Unreachable,
    #[error("overrides the node of the same name in layer `{0}`")]
    Overrides(String),
    #[error("responses {0} and {1} have the same text")]
    DuplicateResponseText(usize, usize),
    #[error("the conversation has no Speaker")]
    NoSpeaker,
    #[error("{0}")]
    Other(String),
}

/// One problem, where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    /// The file, as given to the loader (relative paths stay relative).
    pub file: String,
    pub position: Option<Position>,
    pub node: Option<String>,
    /// The field path inside the node, such as `Responses[2].NextNode`.
    pub field: Option<String>,
    pub problem: Problem,
    /// Where else to look, printed after the message: the first of two definitions.
    pub note: Option<String>,
}

impl Diagnostic {
    pub fn error(file: impl Into<String>, problem: Problem) -> Self {
        Diagnostic {
            severity: Severity::Error,
            file: file.into(),
            position: None,
            node: None,
            field: None,
            problem,
            note: None,
        }
    }

    pub fn warning(file: impl Into<String>, problem: Problem) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(file, problem)
        }
    }

    pub fn at(mut self, position: Position) -> Self {
        self.position = Some(position);
        self
    }

    pub fn node(mut self, node: impl Into<String>) -> Self {
        self.node = Some(node.into());
        self
    }

    pub fn field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// Names the other place a duplicate is defined (`first defined at world.json Npcs[2]`).
    pub fn also_at(mut self, file: &str, field: &str) -> Self {
        self.note = Some(if file == self.file {
            format!("first defined at {field}")
        } else {
            format!("first defined in {file} at {field}")
        });
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let severity = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(f, "{severity}: {}", self.file)?;
        if let Some(Position { line, column }) = self.position {
            write!(f, ":{line}:{column}")?;
        }
        match (&self.node, &self.field) {
            (Some(node), Some(field)) => write!(f, ": node `{node}`, field `{field}`")?,
            (Some(node), None) => write!(f, ": node `{node}`")?,
            (None, Some(field)) => write!(f, ": field `{field}`")?,
            (None, None) => {}
        }
        write!(f, ": {}", self.problem)?;
        if let Some(note) = &self.note {
            write!(f, " ({note})")?;
        }
        Ok(())
    }
}

/// True if any diagnostic is an error.
pub fn has_errors(diagnostics: &[Diagnostic]) -> bool {
    diagnostics.iter().any(Diagnostic::is_error)
}

/// The 1-based line and column of a byte offset in a text.
pub fn position_of(text: &[u8], offset: usize) -> Position {
    let before = &text[..offset.min(text.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    Position {
        line,
        column: offset.min(text.len()) - line_start + 1,
    }
}
