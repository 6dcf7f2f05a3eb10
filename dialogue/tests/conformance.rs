//! The conformance vectors in `conformance/`: what correct looks like for a client in any
//! language, produced here from the Rust implementation.
//!
//! Each vector file is regenerated and compared with the committed one: a change to the rules
//! that is not re-recorded fails this test. Re-record with
//! `BANTER_BLESS=1 cargo test -p banter-dialogue --test conformance`, and the committed vectors
//! are then checked by every client (`conformance/README.md`). The Rust crates run them too, in
//! the test below each generator: a vector is only trusted once the implementation it came from
//! replays it.

mod content_support;

use std::collections::BTreeMap;
use std::path::PathBuf;

use banter_dialogue::canonical;
use banter_dialogue::check;
use banter_dialogue::text::{balanced_prefix, prefix, visible_graphemes};
use banter_dialogue::{
    ClientWalk, Condition, DialogueGraph, Outgoing, Screen, VertexId, VertexKind, WalkError,
    build_conversation, next_line,
};
use banter_protocol::{Action, ActionPayload, ActionType, FactSheet, QuestStatus};
use serde_json::{Value, json};

fn conformance_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../conformance")
}

/// Writes `value` (with BANTER_BLESS=1) or checks the committed file is exactly it.
fn bless_or_check(file: &str, value: &Value) {
    let path = conformance_dir().join(file);
    let text = format!(
        "{}\n",
        serde_json::to_string_pretty(value).expect("vectors serialize")
    );
    if std::env::var_os("BANTER_BLESS").is_some() {
        std::fs::create_dir_all(conformance_dir()).expect("conformance folder");
        std::fs::write(&path, &text).expect("write vectors");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == text,
        "{} is out of date: BANTER_BLESS=1 cargo test -p banter-dialogue --test conformance",
        path.display()
    );
}

fn sample() -> banter_dialogue::content::Content {
    let (content, diagnostics) = check::load_and_check(&content_support::sample_content());
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    content
}

// ---------------------------------------------------------------------------------------------
// Payloads.

fn error_kind(e: &banter_protocol::PayloadError) -> &'static str {
    match e {
        banter_protocol::PayloadError::FieldCount { .. } => "field_count",
        banter_protocol::PayloadError::BadEscape { .. } => "bad_escape",
        banter_protocol::PayloadError::BadAmount { .. } => "bad_amount",
    }
}

fn payload_vectors() -> Value {
    let content = sample();
    // Every action the sample authors, then the escapes and corners the sample lacks.
    let mut actions: Vec<Action> = Vec::new();
    for merged in content.merged.values() {
        for node in merged.nodes.values() {
            actions.extend(node.actions.iter().cloned());
            if let banter_dialogue::Exit::Responses(responses) = &node.exit {
                for r in responses {
                    actions.extend(r.actions.iter().cloned());
                }
            }
        }
    }
    actions.extend([
        Action::AcceptQuest {
            quest_id: "Pipe|Quest".into(),
        },
        Action::CompleteQuest {
            quest_id: "Back\\slash".into(),
        },
        Action::CheckQuest {
            quest_id: "Q".into(),
            success_node: "Ok|Node".into(),
            failure_node: "Not\\Yet|".into(),
        },
        Action::AdvanceObjective {
            quest_id: "Q".into(),
            objective_id: "O".into(),
            amount: Some(banter_protocol::ObjectiveAmount {
                amount: 4_294_967_295,
                island: Some("isle|with\\both".into()),
            }),
        },
        Action::PlayCutscene {
            scene: "Scene".into(),
            quest_id: None,
        },
        Action::OpenSellMenu,
        Action::OpenShop {
            shop: "日本の店".into(),
        },
        // An `Amount` without an `Island` is written when the content states it, 1 included:
        // only an absent `Amount` (and no `Island`) leaves the field out.
        Action::AdvanceObjective {
            quest_id: "Q".into(),
            objective_id: "O".into(),
            amount: Some(banter_protocol::ObjectiveAmount {
                amount: 1,
                island: None,
            }),
        },
        Action::AdvanceObjective {
            quest_id: "Q".into(),
            objective_id: "O".into(),
            amount: Some(banter_protocol::ObjectiveAmount {
                amount: 3,
                island: None,
            }),
        },
        Action::AdvanceObjective {
            quest_id: "Q".into(),
            objective_id: "O".into(),
            amount: None,
        },
        // A `CheckQuest` missing `SuccessNode` or `FailureNode` (content refuses it:
        // "CheckQuest needs both SuccessNode and FailureNode") is read with the missing node
        // empty, and its payload writes an empty field: `Q||`, `Q|Ok|`, `Q||No`.
        Action::CheckQuest {
            quest_id: "Q".into(),
            success_node: String::new(),
            failure_node: String::new(),
        },
        Action::CheckQuest {
            quest_id: "Q".into(),
            success_node: "Ok".into(),
            failure_node: String::new(),
        },
        Action::CheckQuest {
            quest_id: "Q".into(),
            success_node: String::new(),
            failure_node: "No".into(),
        },
    ]);
    let mut seen = std::collections::BTreeSet::new();
    let build: Vec<Value> = actions
        .iter()
        .filter(|a| seen.insert(format!("{a:?}")))
        .map(|a| json!({ "action": canonical::action_json(a), "payload": ActionPayload::build(a) }))
        .collect();
    let parse_cases: Vec<(ActionType, &str)> = vec![
        (ActionType::AcceptQuest, "Quest"),
        (ActionType::AcceptQuest, "Pipe\\|Quest"),
        (ActionType::AcceptQuest, "a|b"),
        (ActionType::AcceptQuest, "bad\\escape"),
        (ActionType::AcceptQuest, "trailing\\"),
        (ActionType::CheckQuest, "Q|Ok"),
        (ActionType::CheckQuest, "Q|Ok|No"),
        (ActionType::AdvanceObjective, "Q|O"),
        (ActionType::AdvanceObjective, "Q|O|2"),
        (ActionType::AdvanceObjective, "Q|O|2|isle"),
        (ActionType::AdvanceObjective, "Q|O|02"),
        (ActionType::AdvanceObjective, "Q|O|+2"),
        (ActionType::AdvanceObjective, "Q|O|2.0"),
        (ActionType::AdvanceObjective, "Q|O|"),
        (ActionType::AdvanceObjective, "Q|O|4294967296"),
        (ActionType::AdvanceObjective, "Q|O|1|isle|extra"),
        (ActionType::AdvanceObjective, "Q"),
        (ActionType::OpenSellMenu, ""),
        (ActionType::PlayCutscene, "Scene|Quest"),
        (ActionType::ChooseRideBoat, ""),
        // An amount is at least 1: content refuses `Amount` 0, and so does the payload.
        (ActionType::AdvanceObjective, "Q|O|0"),
        (ActionType::AdvanceObjective, "Q|O|1"),
        (ActionType::AdvanceObjective, "Q|O|-1"),
        // Several errors at once: a bad escape wins over the field count, which wins over
        // the amount (the escapes are read first, left to right, then the fields counted,
        // then the amount read).
        (ActionType::AcceptQuest, "a\\x|b"),
        (ActionType::AdvanceObjective, "Q|O|02|x|y"),
        (ActionType::AdvanceObjective, "Q|O|0\\"),
        (ActionType::AdvanceObjective, "Q|O|x|isle\\q"),
        // `OpenSellMenu` takes only the empty payload: anything else is `field_count`, even a
        // single non-empty field; a bad escape still comes first.
        (ActionType::OpenSellMenu, "x"),
        (ActionType::OpenSellMenu, "|"),
        (ActionType::OpenSellMenu, "\\|"),
        (ActionType::OpenSellMenu, " "),
        (ActionType::OpenSellMenu, "\\x"),
        // An empty field is an empty identifier: it parses (content never authors one, so such
        // a payload matches no armed action). A `CheckQuest`'s empty nodes are left out of the
        // action, as content leaves out a missing node.
        (ActionType::AcceptQuest, ""),
        (ActionType::OpenShop, ""),
        (ActionType::CheckQuest, "||"),
        (ActionType::CheckQuest, "Q|Ok|"),
        (ActionType::AdvanceObjective, "|"),
        (ActionType::AdvanceObjective, "Q|O|1|"),
        (ActionType::PlayCutscene, "Scene|"),
        (ActionType::PlayCutscene, ""),
    ];
    let parse: Vec<Value> = parse_cases
        .iter()
        .map(
            |(action_type, payload)| match ActionPayload::parse(*action_type, payload) {
                Ok(action) => json!({
                    "type": action_type.name(),
                    "payload": payload,
                    "action": canonical::action_json(&action),
                }),
                Err(e) => json!({
                    "type": action_type.name(),
                    "payload": payload,
                    "error": error_kind(&e),
                }),
            },
        )
        .collect();
    json!({ "build": build, "parse": parse })
}

#[test]
fn payload_vectors_are_current_and_replay() {
    let vectors = payload_vectors();
    bless_or_check("payloads.json", &vectors);
    // Replay: every build parses back to its action, every parse case gives its verdict.
    for case in vectors["build"].as_array().expect("build") {
        let payload = case["payload"].as_str().expect("payload");
        let action: Value = case["action"].clone();
        let action_type: ActionType = action["Type"]
            .as_str()
            .expect("Type")
            .parse()
            .expect("type");
        let parsed = ActionPayload::parse(action_type, payload).expect("a built payload parses");
        assert_eq!(canonical::action_json(&parsed), action);
    }
    assert!(
        vectors["parse"]
            .as_array()
            .expect("parse")
            .iter()
            .any(|c| c.get("error").is_some())
    );
}

// ---------------------------------------------------------------------------------------------
// Visible graphemes and typewriter prefixes.

fn text_vectors() -> Value {
    // Each text with the rule it shows (docs/CONTENT.md, "Rich text").
    let texts: &[(&str, &str)] = &[
        ("Hello there.", "plain text: one grapheme a character"),
        (
            "<b>Bold</b> and <i>italic</i>",
            "tags draw nothing; the last prefix keeps the closing tag",
        ),
        ("<font color=\"#fff\">hi</font>", "a tag with an attribute"),
        (
            "<color=\"a>b\">x</color>",
            "a double-quoted value right after `=` may hold `>`",
        ),
        (
            "<color='a>b'>x</color>",
            "a single-quoted value right after `=` may hold `>`",
        ),
        (
            "<i'm>x",
            "a quote not right after `=` is an ordinary byte: the tag ends at the first `>`",
        ),
        (
            "<color=\"a>b",
            "an unclosed quoted value: not a tag, the `<` is visible",
        ),
        (
            "<b>bold <i>both</b> plain",
            "a closing tag closes the nearest open tag of its name and those opened after it",
        ),
        (
            "<B>x</b>",
            "tag names match case-insensitively when balancing",
        ),
        (
            "</b>x",
            "a closing tag that matches nothing is ignored when balancing",
        ),
        (
            "<color=#f00>red</color>",
            "a tag's name ends at the first character that is not a letter, digit, `-`, `_` or `:`",
        ),
        (
            "a<x/>b<br>c<br />d",
            "self-closing tags and `<br>` open nothing",
        ),
        (
            "<x/\t\n>a<y/\u{feff}>b<z/\u{85}>c",
            "a tag is self-closing when its last character before `>` that is not ASCII whitespace (space, tab, line feed, form feed, carriage return) is `/`: other spaces (U+FEFF, U+0085) are part of the tag, so `<y/\u{feff}>` and `<z/\u{85}>` open `y` and `z`",
        ),
        ("<!-- a comment -->visible", "a comment is invisible"),
        (
            "a<!-- never closed",
            "an unterminated comment is not a comment: its `<` and the rest are visible",
        ),
        ("<!---->x", "an empty comment"),
        (
            "Fish &amp; chips &lt;3 &#39;ok&#x27; &nbsp;end",
            "an entity is one character",
        ),
        ("&amp;&lt;&gt;&quot;&apos;&nbsp;", "the six named entities"),
        (
            "&AMP; &Amp;",
            "entity names are case-sensitive: `&AMP;` is five visible characters",
        ),
        (
            "&foo; &amp no entity &#xD800;",
            "an unknown name, a missing `;`, a surrogate: not entities, their `&` visible",
        ),
        (
            "&#65;&#x41;&#X41;",
            "decimal and hex numeric references, `x` or `X`",
        ),
        (
            "&#0065;&#x0041;",
            "leading zeros count toward the digit limit",
        ),
        (
            "&#1114111;&#x10FFFF;",
            "the largest code point: 7 decimal or 6 hex digits",
        ),
        ("&#1114112;&#x110000;", "above U+10FFFF: not an entity"),
        (
            "&#11141110;&#x0010FFFF;",
            "more than 7 decimal or 6 hex digits: not an entity",
        ),
        ("&#0;&#x0;", "NUL is refused: not an entity"),
        (
            "&#xDFFF;&#55296;",
            "surrogates are refused in hex and decimal",
        ),
        ("&#;&#x;&#x41", "no digits, or no `;`: not an entity"),
        ("&#65x;", "a non-digit before the `;`: not an entity"),
        ("a < b > c, <3", "a lone `<` or `>` is visible"),
        ("x<y", "a `<` with no `>` after it is visible"),
        (
            "a <1b>",
            "a `<` must be followed by a letter (or `/` and a letter) to open a tag",
        ),
        ("<<b>x</b>", "a `<` before another `<` is visible"),
        (
            "e\u{301}te\u{301} cafe\u{301}",
            "a combining accent joins its letter: one grapheme",
        ),
        (
            "<b>e&#x301;</b>",
            "references are decoded before graphemes are counted",
        ),
        (
            "e<b>&#x301;</b>",
            "a tag inside a cluster does not split it",
        ),
        (
            "しーっ！ヤドカリを数えてるの。",
            "CJK: one grapheme a character",
        ),
        ("<color=#f00>赤い</color>魚", "CJK with tags"),
        ("مَرْحَبًا يا بيم", "Arabic with vowel marks"),
        (
            "👨‍👩‍👧 🇯🇵 👍🏽",
            "a ZWJ family, a flag and a skin tone are one grapheme each",
        ),
        (
            "line<br/>break\nnewline",
            "a line break is a grapheme; `<br/>` is a tag",
        ),
        ("cr\r\nlf", "CR LF is one grapheme"),
        (
            "<b><i>x</i></b>",
            "nested tags: balanced prefixes close innermost first",
        ),
        ("", "the empty line"),
        (
            "<a x= \"1>\">a</a><b x=\t'2>'>b</b><i x=\n\"3>\">c</i><u x=\u{c}\r \"4>\">d</u>",
            "space, tab, line feed, form feed and carriage return may come between `=` and the quote",
        ),
        (
            "<font color =  \"a>b\">x</font>",
            "whitespace before the `=` too: the quote follows `=` once whitespace is skipped",
        ),
        (
            "<a x=\u{b}\"1>\">y</a>",
            "a vertical tab is not whitespace: the quote is an ordinary byte and the tag ends at the first `>`",
        ),
        (
            "<a x=\u{a0}\"1>\">y</a>",
            "a no-break space is not whitespace: the quote is an ordinary byte and the tag ends at the first `>`",
        ),
        (
            "<color=\"a<b\">x</color>",
            "inside a quoted value a `<` is an ordinary byte: only the closing quote ends the value",
        ),
        (
            "<color='a<b>c'>x</color>",
            "inside a quoted value `<` and `>` are both ordinary bytes",
        ),
        (
            "a<!-- <b>x</b>",
            "an unterminated `<!--` is text, and scanning goes on after its `<`: later tags are still tags",
        ),
        (
            "a<!--x-->b<!-- c<i>d</i>",
            "a comment closes at its first `-->`; a later unterminated `<!--` is text, its tags still tags",
        ),
        (
            "<b></b>",
            "no visible grapheme: the one prefix (0) is the whole source, tags included",
        ),
        (
            "<b><i>",
            "no visible grapheme and tags left open: the one prefix is the whole source, balanced closes them",
        ),
        (
            "<!-- only a comment --><br/>",
            "no visible grapheme: a comment and a tag alone, the one prefix is the whole source",
        ),
        (
            "<B>hi</b>",
            "an appended closing tag spells the name as its opening tag does",
        ),
        (
            "<Color=#f00><I>hey</I></COLOR>",
            "appended closing tags spell each name as written, innermost first",
        ),
        (
            "a<BR>b<Br/>c<bR >d<br>e",
            "`br` opens nothing in any case: `<BR>`, `<Br/>`, `<bR >`, `<br>`",
        ),
        (
            "<hr>a<img src=\"x.png\">b",
            "`br` is the only name that never takes a closing tag: `<hr>` and `<img>` open tags that balanced prefixes close",
        ),
        (
            "<h1>T</h1><bé>xy</bé>",
            "a tag's name is a run of ASCII letters, digits, `-`, `_` and `:`: `<h1>` is `h1`, `<bé>` is `b` and is closed by `</b>`",
        ),
        (
            "<é>x</é>",
            "a tag begins with an ASCII letter after `<` or `</`: `<é>` and `</é>` are text",
        ),
        (
            "a</ b>c",
            "`</` must be followed at once by an ASCII letter: `</ b>` is text",
        ),
        (
            "<!-->x",
            "`-->` is searched from the end of `<!--`: `<!-->` is not a comment, its `<` and `>` are visible",
        ),
        (
            "<!--->x",
            "`-->` is searched from the end of `<!--`: `<!--->` is not a comment",
        ),
        (
            "<!-->a-->b",
            "`<!-->` does not close at its own `>`: the comment runs to the first `-->` after `<!--`",
        ),
        (
            "<b>x</b title=\"a>b\">y",
            "a closing tag is read by the same rules: a value quoted after `=` may hold `>`",
        ),
        (
            "<b>x</b/>y",
            "a closing tag is never self-closing: `</b/>` closes `b`",
        ),
    ];
    Value::Array(
        texts
            .iter()
            .map(|(text, rule)| {
                let n = visible_graphemes(text);
                json!({
                    "text": text,
                    "rule": rule,
                    "visible": n,
                    "prefixes": (0..=n).map(|k| prefix(text, k)).collect::<Vec<_>>(),
                    "balanced_prefixes": (0..=n).map(|k| balanced_prefix(text, k)).collect::<Vec<_>>(),
                })
            })
            .collect(),
    )
}

#[test]
fn text_vectors_are_current() {
    bless_or_check("text.json", &text_vectors());
}

// ---------------------------------------------------------------------------------------------
// Conditions.

fn facts(quests: &[(&str, QuestStatus)], coins: i64, has: &[&str]) -> FactSheet {
    FactSheet {
        quests: quests.iter().map(|(q, s)| ((*q).to_owned(), *s)).collect(),
        progress: BTreeMap::from([("CopperSnappers/Catch".to_owned(), 2)]),
        coins,
        experience: 40,
        tutorial_stage: 3,
        has: has.iter().map(|h| (*h).to_owned()).collect(),
    }
}

fn condition_vectors() -> Value {
    let sheet = facts(
        &[
            ("CopperSnappers", QuestStatus::Completed),
            ("LostReel", QuestStatus::Active),
        ],
        120,
        &["Dialogue.Talking", "PostReveal"],
    );
    // Each case with what it shows. The groups: atoms, precedence and grouping, integers,
    // whitespace, the bounds, and one case (at least) of every error class.
    let nest = |n: usize| format!("{}true{}", "(".repeat(n), ")".repeat(n));
    let nots = |n: usize| format!("{}true", "!".repeat(n));
    let padded = |bytes: usize| {
        let core = "coins >= 100";
        format!("{core}{}", " ".repeat(bytes - core.len()))
    };
    let mut cases: Vec<(String, &str)> = [
        ("true", "a constant"),
        ("false", "a constant"),
        ("coins >= 100", "a counter against an integer"),
        ("coins < 100", "a counter against an integer"),
        ("experience == 40", "a counter against an integer"),
        ("tutorial_stage != 3", "a counter against an integer"),
        ("100 <= coins", "the integer may come first"),
        ("coins > experience", "two counters compared"),
        ("3 > 2", "two integers compared"),
        ("quest(CopperSnappers) == completed", "a quest status"),
        ("quest(LostReel) == active", "a quest status"),
        (
            "quest(VoyageToMistral) == available",
            "a quest the sheet leaves out is available",
        ),
        (
            "quest(VoyageToMistral) != available",
            "a quest the sheet leaves out is available",
        ),
        (
            "quest(VoyageToMistral) == unavailable",
            "a quest the sheet leaves out is available",
        ),
        ("has(PostReveal)", "a tag in facts.has"),
        ("has(Dialogue.Talking)", "a state name with a dot"),
        ("has(Afk)", "a name not in facts.has is false"),
        ("!has(Afk)", "negation"),
        (
            "progress(CopperSnappers, Catch) >= 2",
            "an objective's progress",
        ),
        (
            "progress(CopperSnappers, Catch) < 2",
            "an objective's progress",
        ),
        (
            "progress(Nothing, Here) == 0",
            "progress the sheet leaves out is 0",
        ),
        ("has(PostReveal) && coins >= 200", "and"),
        ("has(Afk) || coins >= 100", "or"),
        ("(coins >= 100 && !has(Afk)) || false", "grouping"),
        (
            "true || false && false",
            "&& binds tighter than ||: true || (false && false)",
        ),
        ("(true || false) && false", "parentheses override it"),
        ("!true || true", "! binds tighter than ||: (!true) || true"),
        ("!(true || true)", "! of a group"),
        ("!!true", "! may repeat"),
        (
            "false && true || true",
            "left to right at each level: (false && true) || true",
        ),
        ("true && true && false", "a chain of &&"),
        ("false || false || true", "a chain of ||"),
        (
            "coins == -5",
            "a negative integer: `-` directly before the digits",
        ),
        ("-5 < 0", "a negative integer first"),
        ("0 == -0", "-0 is 0"),
        ("007 == 7", "leading zeros are allowed"),
        (
            "9223372036854775807 > 0",
            "the largest 64-bit signed integer",
        ),
        (
            "-9223372036854775808 < 0",
            "the smallest 64-bit signed integer",
        ),
        (
            "coins > -9223372036854775808",
            "the smallest 64-bit signed integer",
        ),
        ("9223372036854775808 > 0", "error: one above the largest"),
        ("-9223372036854775809 < 0", "error: one below the smallest"),
        (
            "coins == - 5",
            "error: a `-` must be followed at once by a digit",
        ),
        (
            "coins == --5",
            "error: a `-` must be followed at once by a digit",
        ),
        (
            "coins == 5-",
            "error: a `-` must be followed at once by a digit",
        ),
        ("coins == 1.5", "error: no fractions"),
        ("coins == 1e3", "error: no exponents"),
        ("coins == +5", "error: no `+` sign"),
        (
            "  coins\t>=\n100\r ",
            "whitespace: space, tab, line feed, carriage return anywhere between tokens",
        ),
        ("has( PostReveal )", "whitespace inside the parentheses"),
        (
            "quest (LostReel) == active",
            "whitespace between a keyword and its `(`",
        ),
        ("coins>=100&&has(PostReveal)", "no whitespace at all"),
        (
            "coins\u{a0}>= 100",
            "error: a no-break space is not whitespace",
        ),
        (
            "coins\u{b}>= 100",
            "error: a vertical tab is not whitespace",
        ),
        ("coins > = 100", "error: an operator is never split"),
        ("", "error: an empty condition"),
        ("   ", "error: only whitespace"),
        ("!", "error: a lone !"),
        ("()", "error: empty parentheses"),
        ("(true", "error: an unclosed parenthesis"),
        ("true)", "error: trailing input"),
        ("true true", "error: trailing input"),
        ("coins", "error: a counter alone is not a condition"),
        ("coins >=", "error: a comparison without its right side"),
        ("1 < 2 < 3", "error: comparisons do not chain"),
        ("coins >= 1 &&", "error: && without its right side"),
        ("|| true", "error: || without its left side"),
        ("coins = 100", "error: `=` is not an operator"),
        ("coins >= 100 & true", "error: `&` is not an operator"),
        ("gold >= 100", "error: an unknown counter"),
        ("Coins >= 100", "error: names are case-sensitive"),
        ("quest(X) == nonsense", "error: an unknown quest status"),
        ("quest(X) == Active", "error: statuses are lower case"),
        (
            "quest(X) > active",
            "error: a quest compares only with == or !=",
        ),
        ("quest(X)", "error: a quest without its comparison"),
        (
            "has(PostReveal) == true",
            "error: has(...) is a condition, not a value",
        ),
        ("has(", "error: an unclosed has("),
        ("has()", "error: has needs a name"),
        ("has(1abc)", "error: a name starts with a letter or _"),
        ("has(a-b)", "error: `-` is not part of a name"),
        (
            "progress(CopperSnappers) >= 1",
            "error: progress takes a quest and an objective",
        ),
        (
            "progress(CopperSnappers, Catch)",
            "error: a value alone is not a condition",
        ),
        ("coins >= 100 # note", "error: no comments"),
        ("TRUE", "error: constants are lower case"),
        ("has(Über)", "error: names are ASCII"),
        (
            "has(true)",
            "a NAME may spell a keyword: has(true) asks for the tag `true`",
        ),
        (
            "!has(false) && !has(has)",
            "a NAME may spell a keyword: has(false), has(has)",
        ),
        (
            "quest(has) == available",
            "a NAME may spell a keyword: the quest `has`, absent, is available",
        ),
        (
            "progress(coins, true) == 0",
            "a NAME may spell a counter or a keyword: progress(coins, true) is absent, so 0",
        ),
        (
            "true == true",
            "error: true and false are conditions, not values",
        ),
        (
            "coins!=5",
            "operators are read longest first: `!=` before `!`",
        ),
        (
            "coins<=120",
            "operators are read longest first: `<=` before `<`",
        ),
        (
            "coins>=120&&!has(Afk)",
            "operators are read longest first: `>=` before `>`, `&&` then `!`",
        ),
        (
            "coins<-5",
            "`<` then `-5`: a `-` before a digit starts a number",
        ),
        (
            "coins !== 120",
            "error: `!=` is read first, then a lone `=`",
        ),
        (
            "coins <== 120",
            "error: `<=` is read first, then a lone `=`",
        ),
        ("coins <> 120", "error: `<` then `>`: there is no `<>`"),
        (
            "coins =< 120",
            "error: `=` is not an operator: there is no `=<`",
        ),
    ]
    .into_iter()
    .map(|(text, why)| (text.to_owned(), why))
    .collect();
    cases.extend([
        (nest(32), "32 nested parentheses: the deepest allowed"),
        (nest(33), "error: 33 nested parentheses"),
        (nots(32), "32 `!` in a row: each counts toward the depth"),
        (nots(33), "error: 33 `!` in a row"),
        (format!("!{}", nest(31)), "`!` and `(` count together: 32"),
        (format!("!{}", nest(32)), "error: `!` and `(` together: 33"),
        (
            format!("{}has(PostReveal){}", "(".repeat(32), ")".repeat(32)),
            "the `(` of has(...) does not count toward the depth: 32 groups around it are allowed",
        ),
        (
            format!("{}has(PostReveal){}", "(".repeat(33), ")".repeat(33)),
            "error: 33 grouping parentheses around has(...)",
        ),
        (
            format!(
                "{}quest(LostReel) == active{}",
                "(".repeat(32),
                ")".repeat(32)
            ),
            "the `(` of quest(...) does not count toward the depth",
        ),
        (
            format!(
                "{}progress(CopperSnappers, Catch) >= 2{}",
                "(".repeat(32),
                ")".repeat(32)
            ),
            "the `(` of progress(...) does not count toward the depth",
        ),
        (
            format!("{}!has(Afk){}", "(".repeat(31), ")".repeat(31)),
            "31 groups and a `!` before has(...): 32",
        ),
        (
            format!("{}!has(Afk){}", "(".repeat(32), ")".repeat(32)),
            "error: 32 groups and a `!` before has(...): 33",
        ),
        (
            format!(
                "{}true{} && {}true{}",
                "(".repeat(32),
                ")".repeat(32),
                "(".repeat(32),
                ")".repeat(32)
            ),
            "the depth is how deep, not how many: two groups of 32 side by side are allowed",
        ),
        (padded(1024), "1,024 bytes: the longest allowed"),
        (padded(1025), "error: 1,025 bytes"),
    ]);
    let cases: Vec<Value> = cases
        .iter()
        .map(|(text, why)| match Condition::parse(text) {
            Ok(condition) => {
                json!({ "condition": text, "holds": condition.eval(&sheet), "why": why })
            }
            Err(_) => json!({ "condition": text, "error": true, "why": why }),
        })
        .collect();
    // The cases say what they show; a wrong label would teach the wrong rule.
    for case in &cases {
        let is_error = case.get("error").is_some();
        let labelled = case["why"].as_str().is_some_and(|w| w.starts_with("error"));
        assert_eq!(is_error, labelled, "{case}");
    }
    json!({ "facts": sheet, "cases": cases })
}

#[test]
fn condition_vectors_are_current() {
    bless_or_check("conditions.json", &condition_vectors());
}

// ---------------------------------------------------------------------------------------------
// Client walks: a conversation, the facts, the inputs, and exactly what the client must send
// and show after each.

fn wire(graph: &DialogueGraph, out: &mut Vec<Outgoing>) -> Vec<Value> {
    out.drain(..)
        .filter_map(|o| o.message(graph))
        .map(|m| serde_json::to_value(m).expect("message"))
        .collect()
}

fn screen(graph: &DialogueGraph, walk: &ClientWalk, facts: &FactSheet) -> Value {
    let name = |v: VertexId| {
        graph
            .vertex(v)
            .map(|v| v.name.to_string())
            .unwrap_or_default()
    };
    match walk.screen() {
        Screen::Line(line) => json!({
            "line": name(line),
            "text": graph.vertex(line).map(|v| v.text.to_string()).unwrap_or_default(),
            "choices": walk.choices(graph, facts).map(name).collect::<Vec<_>>(),
            "can_advance": walk.can_advance(graph, facts),
        }),
        Screen::Waiting => json!({ "waiting_for_jump": true }),
        Screen::Ended => json!({ "ended": true }),
    }
}

/// The wire code a server answers a walk error with (`docs/PROTOCOL.md` section 7).
fn walk_code(e: &WalkError) -> &'static str {
    use WalkError as E;
    match e {
        E::UnknownVertex => "unknown_vertex",
        E::NotReachable => "not_reachable",
        E::NotALine => "not_a_line",
        E::NotAResponse => "not_a_response",
        E::AwaitsChoice => "awaits_choice",
        E::AwaitsJump => "awaits_jump",
        E::ConditionFailed => "condition_failed",
        E::NotArmed => "not_armed",
        E::PayloadMismatch => "payload_mismatch",
        E::Closed => "no_conversation",
        E::BadJumpTarget => "internal",
    }
}

/// `{"advance": node}`: the player advances past `node`, by name. The client walk answers it as
/// the server's walk does: the line on screen, or any line shown before.
fn advance_named(
    graph: &DialogueGraph,
    walk: &mut ClientWalk,
    node: &str,
    facts: &FactSheet,
    out: &mut Vec<Outgoing>,
) -> Result<(), WalkError> {
    let named = find_named(graph, walk, node)?;
    walk.advance(graph, named, facts, out)
}

/// `{"choose": response}`: the player picks `response`, by name.
fn choose_named(
    graph: &DialogueGraph,
    walk: &mut ClientWalk,
    response: &str,
    facts: &FactSheet,
    out: &mut Vec<Outgoing>,
) -> Result<(), WalkError> {
    let named = find_named(graph, walk, response)?;
    walk.choose(graph, named, facts, out)
}

/// The vertex a client message names, in the server's order: no conversation before an
/// unknown name.
fn find_named(graph: &DialogueGraph, walk: &ClientWalk, name: &str) -> Result<VertexId, WalkError> {
    if walk.walk().is_closed() {
        return Err(WalkError::Closed);
    }
    graph.find(name).ok_or(WalkError::UnknownVertex)
}

/// One input as the vectors write it (`advance`, `choose` or the server's `jump`), given to the
/// client walk.
fn give(
    graph: &DialogueGraph,
    walk: &mut ClientWalk,
    input: &Value,
    facts: &FactSheet,
    out: &mut Vec<Outgoing>,
) -> Result<(), WalkError> {
    let name = |key: &str| input.get(key).and_then(Value::as_str);
    if let Some(node) = name("advance") {
        advance_named(graph, walk, node, facts, out)
    } else if let Some(response) = name("choose") {
        choose_named(graph, walk, response, facts, out)
    } else {
        let target = name("jump")
            .and_then(|node| graph.find(node))
            .ok_or(WalkError::UnknownVertex)?;
        walk.jump(graph, target, facts, out)
    }
}

/// One step as the vectors write it: the facts if they just changed, the input, what was sent,
/// and the screen after it or the code it was refused with.
fn step_json(
    graph: &DialogueGraph,
    walk: &ClientWalk,
    out: &mut Vec<Outgoing>,
    facts: Option<&FactSheet>,
    input: Value,
    result: Result<(), WalkError>,
    now: &FactSheet,
) -> Value {
    let mut step = json!({ "input": input, "sends": wire(graph, out) });
    if let Some(facts) = facts {
        step["facts"] = json!(facts);
    }
    match result {
        Ok(()) => step["screen"] = screen(graph, walk, now),
        Err(e) => step["refused"] = json!(walk_code(&e)),
    }
    step
}

/// The scripted refusals, each given at most once per scenario, the first time the walk is in
/// the state it needs.
#[derive(Default)]
struct Probed {
    awaits_choice: bool,
    response_as_line: bool,
    line_as_response: bool,
    ahead: bool,
    condition: bool,
    waiting: bool,
    again: bool,
}

/// The facts as they would be had the player accepted, elsewhere (another session), a quest this
/// conversation offers, chosen so that `target`'s conditions now fail and `keep`'s still hold.
fn accepted_elsewhere(
    graph: &DialogueGraph,
    facts: &FactSheet,
    target: VertexId,
    keep: VertexId,
) -> Option<FactSheet> {
    let condition = graph.condition(target)?;
    let offered = graph
        .vertices()
        .flat_map(|(id, _)| graph.actions(id).map(|(_, a)| a.action.clone()))
        .filter_map(|a| match a {
            Action::AcceptQuest { quest_id } => Some(quest_id),
            _ => None,
        });
    for quest in offered {
        if facts
            .quests
            .get(&quest)
            .is_some_and(|s| *s != QuestStatus::Available)
        {
            continue;
        }
        let mut changed = facts.clone();
        changed.quests.insert(quest, QuestStatus::Active);
        if !condition.eval(&changed) && graph.condition(keep).is_none_or(|c| c.eval(&changed)) {
            return Some(changed);
        }
    }
    None
}

/// Plays from `entry`: at each line pick the choice `pick(step)` of those shown (or advance),
/// answer a quest check with its success node, and along the way give the inputs the rules
/// refuse (each refusal sends nothing and changes nothing, so the walk's path is the one it
/// takes without them): a response that does not exist; advancing a line that waits for a
/// choice, a response on screen, the line that has not been shown yet; picking the line on
/// screen as a response; picking a response whose conditions stopped holding (the facts changed:
/// a quest it offers was accepted in another session); advancing or picking again while the
/// server's jump is awaited; advancing again once the conversation has ended. And one input the
/// rules accept although it is not on screen: the step that led to the line on screen, given
/// again (`R` only grows), which shows the line again.
fn scenario(
    name: &str,
    conversation: &str,
    json_text: &str,
    entry: &str,
    sheet: &FactSheet,
    pick: usize,
) -> Value {
    let (graph, diagnostics) = build_conversation(conversation, json_text);
    assert!(diagnostics.iter().all(|d| !d.is_error()), "{diagnostics:?}");
    let vertex_name = |v: VertexId| {
        graph
            .vertex(v)
            .map(|v| v.name.to_string())
            .expect("a vertex of the graph")
    };
    let mut out = Vec::new();
    let entry_id = graph.find(entry).expect("entry");
    let mut walk = ClientWalk::open(&graph, entry_id, sheet, &mut out).expect("opens");
    let open = json!({ "sends": wire(&graph, &mut out), "screen": screen(&graph, &walk, sheet) });
    let mut facts = sheet.clone();
    let mut steps = Vec::new();
    let mut refused_once = false;
    let mut probed = Probed::default();
    // The line last on screen and the response last picked: what the player still sees while
    // the server's jump is awaited, and once the conversation has ended.
    let mut last_line: Option<VertexId> = None;
    let mut last_choice: Option<VertexId> = None;
    // The accepted input that put the line on screen (not a jump).
    let mut came_by: Option<Value> = None;
    for step in 0..40 {
        // The scripted inputs this state allows, each with the answer it must get.
        let mut probes: Vec<(Value, Result<(), WalkError>, Option<FactSheet>)> = Vec::new();
        match walk.screen() {
            Screen::Ended => break,
            Screen::Line(line) => {
                last_line = Some(line);
                // The step that led here, given again: accepted (`R` only grows), and the line
                // is shown again with its choices as they hold now.
                if step >= 1
                    && !probed.again
                    && let Some(input) = came_by.clone()
                {
                    let mut alone = walk.clone();
                    let again = give(&graph, &mut alone, &input, &facts, &mut Vec::new());
                    if again.is_ok() && alone.screen() == walk.screen() {
                        probed.again = true;
                        probes.push((input, Ok(()), None));
                    }
                }
                let choices: Vec<VertexId> = walk.choices(&graph, &facts).collect();
                if let Some(&first) = choices.first() {
                    if !std::mem::replace(&mut probed.awaits_choice, true) {
                        probes.push((
                            json!({ "advance": vertex_name(line) }),
                            Err(WalkError::AwaitsChoice),
                            None,
                        ));
                    }
                    if !std::mem::replace(&mut probed.response_as_line, true) {
                        probes.push((
                            json!({ "advance": vertex_name(first) }),
                            Err(WalkError::NotALine),
                            None,
                        ));
                    }
                    // The line on screen named as a response: shown, but not a response.
                    if !std::mem::replace(&mut probed.line_as_response, true) {
                        probes.push((
                            json!({ "choose": vertex_name(line) }),
                            Err(WalkError::NotAResponse),
                            None,
                        ));
                    }
                    let intended = choices[(pick + step) % choices.len()];
                    if !probed.condition {
                        let stale = choices.iter().filter(|&&r| r != intended).find_map(|&r| {
                            accepted_elsewhere(&graph, &facts, r, intended).map(|f| (r, f))
                        });
                        if let Some((r, changed)) = stale {
                            probed.condition = true;
                            probes.push((
                                json!({ "choose": vertex_name(r) }),
                                Err(WalkError::ConditionFailed),
                                Some(changed),
                            ));
                        }
                    }
                }
                // The reply that has not been shown yet: the line after the one on screen, or
                // after its first response.
                let from = choices.first().copied().unwrap_or(line);
                if !probed.ahead
                    && let Some(next) = next_line(&graph, from, &facts)
                    && !walk.walk().is_reachable(next)
                {
                    probed.ahead = true;
                    probes.push((
                        json!({ "advance": vertex_name(next) }),
                        Err(WalkError::NotReachable),
                        None,
                    ));
                }
            }
            Screen::Waiting => {
                if !std::mem::replace(&mut probed.waiting, true) {
                    let line = last_line.expect("a line was on screen");
                    let response = last_choice.expect("a response was picked");
                    // Until the jump, every step is refused: the check line, and the response
                    // that asked for the check, although both are in `R`.
                    probes.push((
                        json!({ "advance": vertex_name(line) }),
                        Err(WalkError::AwaitsJump),
                        None,
                    ));
                    probes.push((
                        json!({ "choose": vertex_name(response) }),
                        Err(WalkError::AwaitsJump),
                        None,
                    ));
                }
            }
        }
        for (input, expected, changed) in probes {
            if let Some(changed) = &changed {
                facts = changed.clone();
            }
            let result = give(&graph, &mut walk, &input, &facts, &mut out);
            assert_eq!(result, expected, "{name}: {input}");
            steps.push(step_json(
                &graph,
                &walk,
                &mut out,
                changed.as_ref(),
                input,
                result,
                &facts,
            ));
        }
        let (input, result) = match walk.screen() {
            Screen::Ended => break,
            Screen::Line(_) if !refused_once && step == 1 => {
                // A response that is not on screen: the client refuses it and sends nothing.
                refused_once = true;
                let bogus = format!("{entry}_r99");
                let result = choose_named(&graph, &mut walk, &bogus, &facts, &mut out);
                (json!({ "choose": bogus }), result)
            }
            Screen::Line(line) => {
                let choices: Vec<VertexId> = walk.choices(&graph, &facts).collect();
                if choices.is_empty() {
                    if !walk.can_advance(&graph, &facts) {
                        break;
                    }
                    let name = vertex_name(line);
                    let result = advance_named(&graph, &mut walk, &name, &facts, &mut out);
                    (json!({ "advance": name }), result)
                } else {
                    // The choice for this step, or the next one whose conditions still hold
                    // (the facts may have changed since the line was shown).
                    let n = choices.len();
                    let Some(choice) = (0..n)
                        .map(|k| choices[(pick + step + k) % n])
                        .find(|&r| graph.condition(r).is_none_or(|c| c.eval(&facts)))
                    else {
                        break;
                    };
                    last_choice = Some(choice);
                    let name = vertex_name(choice);
                    let result = choose_named(&graph, &mut walk, &name, &facts, &mut out);
                    (json!({ "choose": name }), result)
                }
            }
            Screen::Waiting => {
                // The server's answer to the CheckQuest just sent (on the line or response
                // reached last that carries one): its success node.
                let target = walk
                    .walk()
                    .reachable()
                    .iter()
                    .rev()
                    .flat_map(|&id| graph.actions(id).map(|(_, a)| a.action.clone()))
                    .find_map(|a| match a {
                        Action::CheckQuest { success_node, .. } => Some(success_node),
                        _ => None,
                    })
                    .expect("a check to answer");
                let target_id = graph.find(&target).expect("target");
                (
                    json!({ "jump": target }),
                    walk.jump(&graph, target_id, &facts, &mut out),
                )
            }
        };
        came_by = (result.is_ok() && input.get("jump").is_none()).then(|| input.clone());
        steps.push(step_json(
            &graph, &walk, &mut out, None, input, result, &facts,
        ));
    }
    // Past the end: the player presses on the last line again.
    if walk.screen() == Screen::Ended
        && let Some(line) = last_line
    {
        let name = vertex_name(line);
        let result = advance_named(&graph, &mut walk, &name, &facts, &mut out);
        assert_eq!(result, Err(WalkError::Closed), "{name}");
        steps.push(step_json(
            &graph,
            &walk,
            &mut out,
            None,
            json!({ "advance": name }),
            result,
            &facts,
        ));
    }
    json!({
        "name": name,
        "conversation": conversation,
        "entry": entry,
        "facts": sheet,
        "open": open,
        "steps": steps,
    })
}

/// A conversation written for the rules the sample content never needs: an entry and a jump
/// target shown whatever their `Conditions`, a line whose responses are all hidden, a line that
/// carries `CheckQuest` itself, an `Island` that forces the amount, and a `Text` with markup (the
/// screen's `text` is the source as written, not decoded).
const RULES: &str = r#"{
  "FirstNode": "Door",
  "Speaker": "Keeper",
  "Door": { "Text": "Who&apos;s <i>there</i>?", "Conditions": "coins >= 1000", "Responses": [
    { "Text": "A rich friend.", "Conditions": "coins >= 1000", "NextNode": "Rich" },
    { "Text": "Me, with a lamp.", "Conditions": "has(Lamp)", "NextNode": "Lamp",
      "Actions": [ { "Type": "TrackQuest", "QuestId": "Lamp" } ] } ] },
  "Rich": { "Text": "Come in, come in.", "Close": true },
  "Lamp": { "Text": "Let me see it.", "NextNode": "Rich",
    "Actions": [ { "Type": "CheckQuest", "QuestId": "Lamp", "SuccessNode": "Bright", "FailureNode": "Dim" } ] },
  "Bright": { "Text": "Bright as day!", "Conditions": "coins >= 1000", "Close": true,
    "Actions": [ { "Type": "AdvanceObjective", "QuestId": "Lamp", "ObjectiveId": "Shine", "Island": "gullrock" } ] },
  "Dim": { "Text": "Dim as dusk.", "Close": true }
}"#;

/// One scenario of explicit inputs over `json_text`: each input with the facts that change
/// before it (if any), and what the walk answers.
fn scripted_scenario(
    name: &str,
    conversation: &str,
    json_text: &str,
    entry: &str,
    sheet: &FactSheet,
    inputs: Vec<(Value, Option<FactSheet>)>,
) -> Value {
    let (graph, diagnostics) = build_conversation(conversation, json_text);
    assert!(diagnostics.iter().all(|d| !d.is_error()), "{diagnostics:?}");
    let mut out = Vec::new();
    let entry_id = graph.find(entry).expect("entry");
    let mut walk = ClientWalk::open(&graph, entry_id, sheet, &mut out).expect("opens");
    let open = json!({ "sends": wire(&graph, &mut out), "screen": screen(&graph, &walk, sheet) });
    let mut facts = sheet.clone();
    let mut steps = Vec::new();
    for (input, changed) in inputs {
        if let Some(changed) = &changed {
            facts = changed.clone();
        }
        let result = give(&graph, &mut walk, &input, &facts, &mut out);
        steps.push(step_json(
            &graph,
            &walk,
            &mut out,
            changed.as_ref(),
            input,
            result,
            &facts,
        ));
    }
    json!({
        "name": name,
        "conversation": conversation,
        "entry": entry,
        "facts": sheet,
        "open": open,
        "steps": steps,
    })
}

/// The rules the sample content never needs, step by step over [`RULES`].
fn rule_scenarios() -> (String, Vec<Value>) {
    let mut diagnostics = Vec::new();
    let file = banter_dialogue::canonical::parse_conversation(
        "Rules.json",
        RULES.as_bytes(),
        &mut diagnostics,
    )
    .expect("parses");
    let merged = banter_dialogue::layers::merge("Rules", &file, &[], &mut diagnostics);
    assert!(diagnostics.iter().all(|d| !d.is_error()), "{diagnostics:?}");
    let text = canonical::to_json(&merged);
    let poor = facts(&[], 0, &["Dialogue.Talking"]);
    let lamp = facts(
        &[("Lamp", QuestStatus::Active)],
        0,
        &["Dialogue.Talking", "Lamp"],
    );
    let lamp_lost = facts(&[("Lamp", QuestStatus::Active)], 0, &["Dialogue.Talking"]);
    let scenarios = vec![
        scripted_scenario(
            "Rules: the entry is shown whatever its conditions; every response hidden, the line is advanced past and the conversation ends",
            "Rules",
            &text,
            "Door",
            &poor,
            vec![
                (json!({ "choose": "Door_r1" }), None),
                (json!({ "advance": "Door" }), None),
                (json!({ "choose": "Door_r2" }), None),
            ],
        ),
        scripted_scenario(
            "Rules: a response that starts holding after its line was shown is not in R: not a choice, not_reachable if picked, and the line is advanced past",
            "Rules",
            &text,
            "Door",
            &poor,
            vec![
                (json!({ "choose": "Door_r2" }), Some(lamp.clone())),
                (json!({ "advance": "Door" }), None),
            ],
        ),
        scripted_scenario(
            "Rules: the responses shown stop holding: none is a choice any more, the line is advanced past",
            "Rules",
            &text,
            "Door",
            &lamp,
            vec![
                (json!({ "advance": "Door" }), None),
                (json!({ "choose": "Door_r2" }), Some(lamp_lost)),
                (json!({ "advance": "Door" }), None),
            ],
        ),
        scripted_scenario(
            "Rules: a line carrying CheckQuest sends it when shown and waits for the jump; a jump target is shown whatever its conditions; an Island forces the amount; the response action held before the jump goes out with the next accepted step after it",
            "Rules",
            &text,
            "Door",
            &lamp,
            vec![
                (json!({ "choose": "Door_r2" }), None),
                (json!({ "advance": "Lamp" }), None),
                (json!({ "choose": "Door_r2" }), None),
                (json!({ "jump": "Bright" }), None),
                (json!({ "advance": "Lamp" }), None),
                (json!({ "advance": "Bright" }), None),
                (json!({ "advance": "Bright" }), None),
            ],
        ),
    ];
    (text, scenarios)
}

/// A conversation for how branches are numbered and what a `CheckQuest` response with a
/// `NextNode` does. The node names sort differently by UTF-8 bytes (`Done` < `Start` < `after` <
/// `Ｎｅｔ` < `🐟`) than by UTF-16 code units (`🐟` before `Ｎｅｔ`) or case-insensitively
/// (`after` first), and both `Ｎｅｔ` and `🐟` carry a list, so each order numbers the branches
/// differently. `Start_r1`'s one-name list is a branch; `Start_r2`'s plain name is not.
const BRANCHES: &str = r#"{
  "FirstNode": "Start",
  "Speaker": "Sorter",
  "Start": { "Text": "Which way?", "Responses": [
    { "Text": "After you.", "NextNode": ["after"] },
    { "Text": "By the net.", "NextNode": "Ｎｅｔ" },
    { "Text": "Check my catch.", "NextNode": "Done",
      "Actions": [ { "Type": "CheckQuest", "QuestId": "Catch", "SuccessNode": "🐟", "FailureNode": "Done" } ] } ] },
  "after": { "Text": "After me, then.", "NextNode": ["Ｎｅｔ"] },
  "Ｎｅｔ": { "Text": "A net.", "NextNode": ["🐟", "Done"] },
  "🐟": { "Text": "A fish!", "NextNode": ["Done"] },
  "Done": { "Text": "Done.", "Close": true }
}"#;

/// Branch numbering and a `CheckQuest` response with a `NextNode`, step by step over
/// [`BRANCHES`].
fn branch_scenarios() -> (String, Vec<Value>) {
    let mut diagnostics = Vec::new();
    let file = banter_dialogue::canonical::parse_conversation(
        "Branches.json",
        BRANCHES.as_bytes(),
        &mut diagnostics,
    )
    .expect("parses");
    let merged = banter_dialogue::layers::merge("Branches", &file, &[], &mut diagnostics);
    assert!(diagnostics.iter().all(|d| !d.is_error()), "{diagnostics:?}");
    let text = canonical::to_json(&merged);
    // The numbers the scenario names: vertices 1 to 5 are the nodes in UTF-8 byte order, 6 to 8
    // `Start`'s responses, then the branches of `Start_r1`, `after`, `Ｎｅｔ` and `🐟`.
    let (graph, _) = build_conversation("Branches", &text);
    let branches: Vec<String> = graph
        .vertices()
        .filter(|(_, v)| v.kind == VertexKind::Branch)
        .map(|(_, v)| v.name.to_string())
        .collect();
    assert_eq!(
        branches,
        ["Start_b9", "after_b10", "Ｎｅｔ_b11", "🐟_b12"],
        "the branches of BRANCHES"
    );
    let fresh = facts(&[], 0, &["Dialogue.Talking"]);
    let scenarios = vec![
        scripted_scenario(
            "Branches: a one-name NextNode list is a branch (Start_b9), a plain NextNode is not (no Start_b10); branches are numbered after the nodes sorted by the UTF-8 bytes of their names (Ｎｅｔ before 🐟, Start before after)",
            "Branches",
            &text,
            "Start",
            &fresh,
            vec![
                (json!({ "advance": "Start_b9" }), None),
                (json!({ "advance": "Start_b10" }), None),
                (json!({ "choose": "after_b10" }), None),
                (json!({ "advance": "Ｎｅｔ_b11" }), None),
                (json!({ "advance": "🐟_b12" }), None),
                (json!({ "advance": "🐟_b11" }), None),
                (json!({ "choose": "Start_r1" }), None),
                (json!({ "advance": "after" }), None),
                (json!({ "advance": "Ｎｅｔ" }), None),
                (json!({ "advance": "🐟" }), None),
                (json!({ "advance": "Done" }), None),
            ],
        ),
        scripted_scenario(
            "Branches: a response carrying CheckQuest waits for the jump whether or not it has a NextNode: no line on screen, its NextNode never shown (not_reachable), then the jump's line",
            "Branches",
            &text,
            "Start",
            &fresh,
            vec![
                (json!({ "choose": "Start_r3" }), None),
                (json!({ "advance": "Done" }), None),
                (json!({ "advance": "Start" }), None),
                (json!({ "jump": "🐟" }), None),
                (json!({ "advance": "🐟" }), None),
                (json!({ "advance": "Done" }), None),
            ],
        ),
    ];
    (text, scenarios)
}

/// Names that are not a line or a response of the conversation, over a sample conversation with
/// a `NextNode` list: the reserved keys `FirstNode` and `Speaker` and the empty name are no
/// vertex (`unknown_vertex`); the hidden vertex of a `NextNode` list is one, never shown
/// (`not_reachable`), named `<node>_b<n>`; a target the list skipped is `not_reachable`.
fn name_scenarios(content: &banter_dialogue::content::Content) -> Vec<Value> {
    let conversation = "Marisol";
    let merged = content.merged.get(conversation).expect("Marisol");
    let text = canonical::to_json(merged);
    let (graph, _) = build_conversation(conversation, &text);
    let picked = graph.find("Marisol_Hello_r3").expect("Marisol_Hello_r3");
    let branch = graph
        .outputs(picked)
        .iter()
        .find_map(|&v| graph.vertex(v).filter(|v| v.kind == VertexKind::Branch))
        .map(|v| v.name.to_string())
        .expect("Marisol_Hello_r3 leads to a NextNode list");
    // docs/PROTOCOL.md section 8.2 names this branch as its example of the generated name.
    let protocol = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/PROTOCOL.md"),
    )
    .expect("docs/PROTOCOL.md");
    assert!(
        protocol.contains(&format!("the branch `{branch}`")),
        "docs/PROTOCOL.md section 8.2 should name Marisol_Hello_r3's branch `{branch}`"
    );
    let fresh = facts(&[], 0, &["Dialogue.Talking"]);
    vec![scripted_scenario(
        "Names: FirstNode, Speaker and the empty name are no vertex (unknown_vertex); a NextNode list is a hidden vertex <node>_b<n>, never shown (not_reachable); a target the list skipped is not_reachable",
        conversation,
        &text,
        "Marisol_Hello",
        &fresh,
        vec![
            (json!({ "advance": "FirstNode" }), None),
            (json!({ "choose": "FirstNode" }), None),
            (json!({ "advance": "Speaker" }), None),
            (json!({ "choose": "Speaker" }), None),
            (json!({ "advance": "" }), None),
            (json!({ "choose": "Marisol_Hello_r3" }), None),
            (json!({ "advance": branch }), None),
            (json!({ "choose": branch }), None),
            (json!({ "advance": "Marisol_Premium" }), None),
            (json!({ "advance": "Marisol_Regular" }), None),
        ],
    )]
}

fn client_walk_vectors() -> Value {
    let content = sample();
    let fresh = facts(&[], 0, &["Dialogue.Talking"]);
    let veteran = facts(
        &[
            ("CopperSnappers", QuestStatus::Completed),
            ("LanternsOfGullRock", QuestStatus::Completed),
            ("VoyageToMistral", QuestStatus::Completed),
        ],
        150,
        &["Dialogue.Talking", "PostReveal"],
    );
    let mut scenarios = Vec::new();
    let mut conversations = serde_json::Map::new();
    for (conversation, merged) in &content.merged {
        let text = canonical::to_json(merged);
        conversations.insert(conversation.clone(), Value::String(text.clone()));
        let first = merged.first_node.clone().expect("FirstNode");
        // Every quest greeting too: where the resolver opens for an offer.
        let mut entries = vec![first];
        entries.extend(
            merged
                .nodes
                .keys()
                .filter(|n| n.ends_with("_Greet") || n.ends_with("_Check"))
                .cloned(),
        );
        for entry in entries {
            for (label, sheet) in [("fresh", &fresh), ("veteran", &veteran)] {
                for pick in 0..2 {
                    scenarios.push(scenario(
                        &format!("{conversation} from {entry}, {label} player, pick {pick}"),
                        conversation,
                        &text,
                        &entry,
                        sheet,
                        pick,
                    ));
                }
            }
        }
    }
    let (rules, written) = rule_scenarios();
    conversations.insert("Rules".to_owned(), Value::String(rules));
    scenarios.extend(written);
    let (branches, written) = branch_scenarios();
    conversations.insert("Branches".to_owned(), Value::String(branches));
    scenarios.extend(written);
    scenarios.extend(name_scenarios(&content));
    json!({ "conversations": conversations, "scenarios": scenarios })
}

#[test]
fn client_walk_vectors_are_current() {
    let vectors = client_walk_vectors();
    let scenarios = vectors["scenarios"].as_array().expect("scenarios");
    assert!(scenarios.len() >= 40);
    // Every code a client input can be refused with, so that coverage cannot quietly shrink.
    // Not here, because no input in these files can get them from a client walk: `not_armed` and `payload_mismatch` (actions are checked by the server, not walked) and
    // `internal` (a server's jump to something that is not a line).
    let refused: std::collections::BTreeSet<&str> = scenarios
        .iter()
        .flat_map(|s| s["steps"].as_array().expect("steps"))
        .filter_map(|step| step["refused"].as_str())
        .collect();
    let expected = std::collections::BTreeSet::from([
        "awaits_choice",
        "awaits_jump",
        "condition_failed",
        "no_conversation",
        "not_a_line",
        "not_a_response",
        "not_reachable",
        "unknown_vertex",
    ]);
    assert_eq!(refused, expected, "the refusal codes in client_walk.json");
    bless_or_check("client_walk.json", &vectors);
}
