//! The client's side of the walk (article section 6.1): what to show, and what to send when.
//!
//! A [`ClientWalk`] wraps the same [`Walk`] the server keeps, so the client's idea of `R` and of
//! the armings is the server's, and adds the one thing only a client has: the order in which
//! messages go out. A node's actions are sent when the node is shown. A response's actions are
//! held and sent with the player's next accepted step (an advance, or a pick), or at once when
//! nothing follows. A response carrying CheckQuest does not follow its `NextNode`: its actions go
//! out at once and the walk waits for the server's jump. When nothing follows, the held actions
//! go out, then `close`.
//!
//! **One answer per input.** Every input is answered by the walk the server keeps, so a client
//! refuses exactly what the server would refuse, with the same code, and accepts exactly what it
//! would accept: a line or response shown earlier (`R` only grows) may be advanced or picked
//! again, on screen or not.

use banter_protocol::ClientMessage;

use crate::condition::Facts;
use crate::graph::{ActionIndex, DialogueGraph, VertexId};
use crate::walk::{Shown, Walk, WalkError};

/// A message the client sends, in the order it must be sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outgoing {
    Advance(VertexId),
    Choose(VertexId),
    /// The authored action at this index, sent with its type and canonical payload.
    Action(ActionIndex),
    /// The conversation has ended: `close`.
    Close,
}

impl Outgoing {
    /// The wire message for this step, named from `graph` (the graph the walk queued it over):
    /// `advance` and `choose` by vertex name, `action` with its type and canonical payload.
    /// `None` only for a step from another graph, whose vertex or action `graph` lacks.
    pub fn message(self, graph: &DialogueGraph) -> Option<ClientMessage> {
        Some(match self {
            Outgoing::Advance(v) => ClientMessage::Advance {
                id: None,
                node: graph.vertex(v)?.name.to_string(),
            },
            Outgoing::Choose(v) => ClientMessage::Choose {
                id: None,
                response: graph.vertex(v)?.name.to_string(),
            },
            Outgoing::Action(i) => {
                let action = graph.action(i)?;
                ClientMessage::Action {
                    id: None,
                    action: action.action_type,
                    payload: action.payload.to_string(),
                }
            }
            Outgoing::Close => ClientMessage::Close { id: None },
        })
    }
}

/// What the client has on screen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Screen {
    /// An NPC line, with [`ClientWalk::choices`] under it. A line that carries a CheckQuest
    /// itself stays on screen, with no choices and no advance, until the server's jump.
    Line(VertexId),
    /// Waiting for the server's jump after a CheckQuest response.
    Waiting,
    /// The conversation has ended and `close` was queued.
    Ended,
}

/// A client's conversation: the shared walk plus message ordering.
#[derive(Clone, Debug)]
pub struct ClientWalk {
    walk: Walk,
    screen: Screen,
    held: Vec<ActionIndex>,
}

impl ClientWalk {
    /// Opens on the entry the server named, queueing the entry line's actions.
    pub fn open(
        graph: &DialogueGraph,
        entry: VertexId,
        facts: &dyn Facts,
        out: &mut Vec<Outgoing>,
    ) -> Result<ClientWalk, WalkError> {
        let (walk, shown) = Walk::open(graph, entry, facts)?;
        let mut client = ClientWalk {
            walk,
            screen: Screen::Ended,
            held: Vec::new(),
        };
        client.on_shown(graph, shown, out);
        Ok(client)
    }

    pub fn screen(&self) -> Screen {
        self.screen
    }

    /// The walk this client mirrors of the server's.
    pub fn walk(&self) -> &Walk {
        &self.walk
    }

    /// The responses the player may pick under the current line, in priority order: those
    /// shown with it whose `Conditions` hold against `facts` (the facts now).
    pub fn choices<'g>(
        &'g self,
        graph: &'g DialogueGraph,
        facts: &'g dyn Facts,
    ) -> impl Iterator<Item = VertexId> + 'g {
        let line = match self.screen {
            Screen::Line(line) => Some(line),
            _ => None,
        };
        line.into_iter()
            .flat_map(move |line| self.walk.choices(graph, line, facts))
    }

    /// True when the current line waits for the player to advance past it: no choice holds
    /// and no quest check awaits its jump.
    pub fn can_advance(&self, graph: &DialogueGraph, facts: &dyn Facts) -> bool {
        match self.screen {
            Screen::Line(line) => {
                !self.walk.awaits_jump()
                    && self.choices(graph, facts).next().is_none()
                    && graph.vertex(line).is_some_and(|v| !v.awaits_jump)
            }
            _ => false,
        }
    }

    /// The player advances past the NPC line `line`: normally the line on screen, but any line
    /// the walk accepts (one shown earlier shows its next line again).
    pub fn advance(
        &mut self,
        graph: &DialogueGraph,
        line: VertexId,
        facts: &dyn Facts,
        out: &mut Vec<Outgoing>,
    ) -> Result<(), WalkError> {
        let shown = self.walk.advance(graph, line, facts)?;
        out.push(Outgoing::Advance(line));
        out.extend(self.held.drain(..).map(Outgoing::Action));
        self.on_shown(graph, shown, out);
        Ok(())
    }

    /// The player advances past the line on screen.
    pub fn advance_current(
        &mut self,
        graph: &DialogueGraph,
        facts: &dyn Facts,
        out: &mut Vec<Outgoing>,
    ) -> Result<(), WalkError> {
        match self.screen {
            Screen::Line(line) => self.advance(graph, line, facts, out),
            Screen::Waiting => Err(WalkError::AwaitsJump),
            Screen::Ended => Err(WalkError::Closed),
        }
    }

    /// The player picks `response`: normally one of [`ClientWalk::choices`], but any response
    /// the walk accepts (one shown earlier may be picked again).
    pub fn choose(
        &mut self,
        graph: &DialogueGraph,
        response: VertexId,
        facts: &dyn Facts,
        out: &mut Vec<Outgoing>,
    ) -> Result<(), WalkError> {
        let shown = self.walk.choose(graph, response, facts)?;
        out.push(Outgoing::Choose(response));
        // Picking a response is moving past the reply on screen.
        out.extend(self.held.drain(..).map(Outgoing::Action));
        let actions = graph.actions(response).map(|(i, _)| i);
        match shown {
            Shown::Line(_) => self.held.extend(actions),
            Shown::AwaitJump | Shown::End => out.extend(actions.map(Outgoing::Action)),
        }
        self.on_shown(graph, shown, out);
        Ok(())
    }

    /// The server decided where the conversation goes (a quest check's result).
    pub fn jump(
        &mut self,
        graph: &DialogueGraph,
        target: VertexId,
        facts: &dyn Facts,
        out: &mut Vec<Outgoing>,
    ) -> Result<(), WalkError> {
        let shown = self.walk.jump_to(graph, target, facts)?;
        self.on_shown(graph, shown, out);
        Ok(())
    }

    fn on_shown(&mut self, graph: &DialogueGraph, shown: Shown, out: &mut Vec<Outgoing>) {
        self.screen = match shown {
            Shown::Line(line) => {
                out.extend(graph.actions(line).map(|(i, _)| Outgoing::Action(i)));
                Screen::Line(line)
            }
            Shown::AwaitJump => Screen::Waiting,
            Shown::End => {
                out.extend(self.held.drain(..).map(Outgoing::Action));
                out.push(Outgoing::Close);
                self.walk.close();
                Screen::Ended
            }
        };
    }
}
