//! The writing-power rules (docs/CONTENT.md, "What check-content refuses"), on the merged
//! conversation, whose conditions already have the derived variables written in:
//!
//! - a condition naming an undeclared variable, or using one against its type;
//! - a `SetVariable` of an undeclared variable, of a derived one or a fact the server owns
//!   (read-only), or with a value not of the variable's type;
//! - `visits(...)`/`visited(...)` of a name that is no line or response of the conversation;
//! - a group with a `Weight` but no `Weighted` pick, a candidate twice, or (without a
//!   `Fallback`) no candidate that can ever hold;
//! - a line with a greyed-out response where every response can be unavailable at once.
//!
//! A cycle among derived variables and a bad declaration are the loader's (`variables.rs`).

use banter_protocol::Action;

use super::conversation::ConversationCheck;
use crate::condition::Condition;
use crate::diagnostic::{Diagnostic, Problem};
use crate::graph::VertexKind;
use crate::model::{Exit, Group, Next, Pick, Response};
use crate::variables::READ_ONLY_FACTS;

impl ConversationCheck<'_, '_> {
    pub(super) fn writing(&mut self) {
        let conversation = self.conversation;
        let mut found = Vec::new();
        for (name, node) in &conversation.nodes {
            let file = self.file(name);
            let at = |problem: Problem, field: String| {
                Diagnostic::error(file.clone(), problem)
                    .node(name)
                    .field(field)
            };
            let mut check_condition = |text: &Option<String>, field: String| {
                if let Some(text) = text {
                    // One that does not parse is the graph builder's error.
                    if let Ok(condition) = Condition::parse(text) {
                        for problem in self.condition_problems(&condition) {
                            found.push(at(problem, field.clone()));
                        }
                    }
                }
            };
            check_condition(&node.conditions, "Conditions".to_owned());
            let mut responses: &[Response] = &[];
            if let Exit::Responses(r) = &node.exit {
                responses = r;
                for (i, response) in r.iter().enumerate() {
                    check_condition(
                        &response.conditions,
                        format!("Responses[{}].Conditions", i + 1),
                    );
                }
            }
            for (j, action) in node.actions.iter().enumerate() {
                if let Some(problem) = self.set_variable_problem(action) {
                    found.push(at(problem, format!("Actions[{}]", j + 1)));
                }
            }
            for (i, response) in responses.iter().enumerate() {
                for (j, action) in response.actions.iter().enumerate() {
                    if let Some(problem) = self.set_variable_problem(action) {
                        found.push(at(
                            problem,
                            format!("Responses[{}].Actions[{}]", i + 1, j + 1),
                        ));
                    }
                }
            }
            if let Exit::Next(Next::Group(group)) = &node.exit {
                for problem in self.group_problems(group) {
                    found.push(at(problem, "NextNode".to_owned()));
                }
            }
            for (i, response) in responses.iter().enumerate() {
                if let Some(Next::Group(group)) = &response.next {
                    for problem in self.group_problems(group) {
                        found.push(at(problem, format!("Responses[{}].NextNode", i + 1)));
                    }
                }
            }
            if let Some(problem) = soft_lock(responses) {
                found.push(at(problem, "Responses".to_owned()));
            }
        }
        self.out.extend(found);
    }

    /// Undeclared variables, type errors and unknown visited names in one condition.
    fn condition_problems(&self, condition: &Condition) -> Vec<Problem> {
        let variables = &self.content.variables;
        let mut problems = Vec::new();
        condition.visit_references(&mut |r| match r {
            crate::condition::Reference::Variable(v) if variables.type_of(v).is_none() => {
                problems.push(Problem::UndeclaredVariable(v.to_owned()));
            }
            crate::condition::Reference::Visits(v) => {
                let known = self
                    .graph
                    .find(v)
                    .and_then(|id| self.graph.vertex(id))
                    .is_some_and(|x| matches!(x.kind, VertexKind::Prompt | VertexKind::Response));
                if !known {
                    problems.push(Problem::UnknownVisited(v.to_owned()));
                }
            }
            _ => {}
        });
        let type_of = |v: &str| variables.type_of(v);
        problems.extend(
            condition
                .type_errors(&type_of)
                .into_iter()
                .map(Problem::VariableType),
        );
        problems
    }

    /// What is wrong with a `SetVariable`, if it is one and something is.
    fn set_variable_problem(&self, action: &Action) -> Option<Problem> {
        let Action::SetVariable { variable, value } = action else {
            return None;
        };
        let variables = &self.content.variables;
        if READ_ONLY_FACTS.contains(&variable.as_str()) || variables.derived.contains_key(variable)
        {
            return Some(Problem::ReadOnlyFact(variable.clone()));
        }
        let Some(declared) = variables.declared.get(variable) else {
            return Some(Problem::UndeclaredVariable(variable.clone()));
        };
        declared.ty.parse(value).is_none().then(|| {
            Problem::VariableType(format!(
                "`{value}` is not a value of `{variable}`, a {}",
                declared.ty.name()
            ))
        })
    }

    fn group_problems(&self, group: &Group) -> Vec<Problem> {
        let mut problems = Vec::new();
        if group.pick != Pick::Weighted && group.weights.iter().any(Option::is_some) {
            problems.push(Problem::BadGroup(format!(
                "`Weight` is only for a `Weighted` pick, not `{}`",
                group.pick.name()
            )));
        }
        for (i, name) in group.among.iter().enumerate() {
            if group.among[..i].contains(name) {
                problems.push(Problem::BadGroup(format!("`{name}` is a candidate twice")));
            }
        }
        if group.fallback.is_none() {
            let never = |name: &String| {
                self.conversation
                    .nodes
                    .get(name)
                    .and_then(|n| n.conditions.as_deref())
                    .and_then(|c| Condition::parse(c).ok())
                    .is_some_and(|c| c.provably_false())
            };
            if group.among.iter().all(never) {
                problems.push(Problem::EmptyGroup(format!(
                    "no candidate among [{}] can ever hold (every one's `Conditions` are always \
                     false); fix them or give the group a `Fallback`",
                    group.among.join(", ")
                )));
            }
        }
        problems
    }
}

/// A line with a greyed-out response whose responses can all be unavailable at once.
fn soft_lock(responses: &[Response]) -> Option<Problem> {
    if !responses.iter().any(|r| r.disabled.is_some()) {
        return None;
    }
    // Offered whatever the facts: no `Conditions` (or ones that always hold) and not `Once`.
    let always = |r: &Response| {
        !r.once
            && r.conditions
                .as_deref()
                .is_none_or(|c| Condition::parse(c).is_ok_and(|c| c.provably_true()))
    };
    if responses.iter().any(always) {
        return None;
    }
    // Or the responses' conditions together cover every case (`$Met`, `!$Met`).
    let each: Option<Vec<Condition>> = responses
        .iter()
        .filter(|r| !r.once)
        .map(|r| {
            r.conditions
                .as_deref()
                .and_then(|c| Condition::parse(c).ok())
        })
        .collect();
    if each.is_some_and(|cs| Condition::Any(cs).provably_true()) {
        return None;
    }
    Some(Problem::SoftLock(
        "every response can be unavailable at once, so the player could face only greyed-out \
         buttons: give one response no `Conditions` (and no `Once`), or make their \
         `Conditions` cover every case"
            .to_owned(),
    ))
}
