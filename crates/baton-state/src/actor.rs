//! Who acted on a run and through which channel: recorded with every
//! answer and every move a person or a forced recovery made
//! (docs/lifecycle.md "Who may answer"). Re-exported by [`crate::schema`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Who answered a question, or moved a run by hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Who {
    /// A person, through one of a person's own channels ([`Channel::is_persons`]).
    Person,
    /// The agent (its MCP calls).
    Agent,
    /// The `--auto` choice a person made (at a terminal, for a run
    /// `baton run` started, or in their own configuration).
    Auto,
    /// The client's side of the connection, not the agent's calls and not
    /// a person's channel (an `elicitation/create` answer): a client the
    /// agent may control. It counts as the person only where the person
    /// trusted that channel in their own configuration.
    Client,
}

impl Who {
    /// The wire name (`person`, `agent`, `auto`, `client`).
    pub fn as_str(self) -> &'static str {
        match self {
            Who::Person => "person",
            Who::Agent => "agent",
            Who::Auto => "auto",
            Who::Client => "client",
        }
    }
}

/// The channel an answer or action came through. Recorded as its name;
/// names this build does not know load as [`Channel::Other`] (older files
/// keep loading, newer ones are kept as written).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(from = "String", into = "String")]
#[schemars(with = "String")]
pub enum Channel {
    /// `baton answer` (or `baton run`) at a terminal.
    Terminal,
    /// A signed-in dashboard session.
    Dashboard,
    /// The person's own chat message in the client, recorded by the
    /// client's prompt hook.
    Prompt,
    /// A chat round trip (Slack, webhook) to the person.
    Chat,
    /// An MCP `elicitation/create` form answered through the client.
    Elicitation,
    /// The agent's MCP calls.
    Mcp,
    /// `--auto` granted by `baton run` for a run it started itself.
    Driver,
    /// `--auto` allowed by the person's own configuration.
    Config,
    /// `--auto` as recorded before channels of grants were told apart.
    Auto,
    /// Any other name.
    Other(String),
}

impl Channel {
    /// The recorded name.
    pub fn as_str(&self) -> &str {
        match self {
            Channel::Terminal => "terminal",
            Channel::Dashboard => "dashboard",
            Channel::Prompt => "prompt",
            Channel::Chat => "chat",
            Channel::Elicitation => "elicitation",
            Channel::Mcp => "mcp",
            Channel::Driver => "driver",
            Channel::Config => "config",
            Channel::Auto => "auto",
            Channel::Other(name) => name,
        }
    }

    /// Whether this is one of a person's own channels: the terminal, a
    /// signed-in dashboard session, the person's chat message in the
    /// client (`prompt`), a chat round trip. Anything else is the client's
    /// or the agent's.
    pub fn is_persons(&self) -> bool {
        matches!(
            self,
            Channel::Terminal | Channel::Dashboard | Channel::Prompt | Channel::Chat
        )
    }
}

impl From<String> for Channel {
    fn from(name: String) -> Channel {
        match name.as_str() {
            "terminal" => Channel::Terminal,
            "dashboard" => Channel::Dashboard,
            "prompt" => Channel::Prompt,
            "chat" => Channel::Chat,
            "elicitation" => Channel::Elicitation,
            "mcp" => Channel::Mcp,
            "driver" => Channel::Driver,
            "config" => Channel::Config,
            "auto" => Channel::Auto,
            _ => Channel::Other(name),
        }
    }
}

impl From<&str> for Channel {
    fn from(name: &str) -> Channel {
        Channel::from(name.to_string())
    }
}

impl From<Channel> for String {
    fn from(c: Channel) -> String {
        c.as_str().to_string()
    }
}

impl std::fmt::Display for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who acted and through which channel, recorded with every answer:
/// `person:terminal`, `person:dashboard`, `person:prompt`, `client:elicitation`,
/// `agent:mcp`, `auto:driver`, … Whether an actor may answer a question is
/// decided by `baton_usecases::trust`, never here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Actor {
    /// Person, agent, auto or client.
    pub who: Who,
    /// The channel.
    pub channel: Channel,
    /// The client session it came through, when the channel has one (the
    /// client's session id for `prompt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

impl Actor {
    /// A person answering through `channel`. A channel that is not one of
    /// a person's own ([`Channel::is_persons`]) makes a client's actor
    /// instead: a person is never recorded for a channel the agent may
    /// control.
    pub fn person(channel: impl Into<Channel>) -> Actor {
        let channel = channel.into();
        let who = if channel.is_persons() {
            Who::Person
        } else {
            Who::Client
        };
        Actor {
            who,
            channel,
            session: None,
        }
    }

    /// A person answering through `channel` in the client session `session`
    /// (the prompt hook's record of the person's own message).
    pub fn person_in_session(channel: impl Into<Channel>, session: &str) -> Actor {
        Actor {
            session: Some(session.to_string()),
            ..Actor::person(channel)
        }
    }

    /// The client's side of the connection (elicitation).
    pub fn client(channel: impl Into<Channel>) -> Actor {
        Actor {
            who: Who::Client,
            channel: channel.into(),
            session: None,
        }
    }

    /// The agent, through its MCP calls.
    pub fn agent() -> Actor {
        Actor {
            who: Who::Agent,
            channel: Channel::Mcp,
            session: None,
        }
    }

    /// The person's `--auto` choice, granted through `channel`
    /// ([`Channel::Terminal`], [`Channel::Driver`] or [`Channel::Config`]).
    pub fn auto_via(channel: Channel) -> Actor {
        Actor {
            who: Who::Auto,
            channel,
            session: None,
        }
    }

    /// `person:terminal`, `agent:mcp`, `auto:driver`, `client:elicitation`:
    /// the form kept in history and shown to people.
    pub fn label(&self) -> String {
        format!("{}:{}", self.who.as_str(), self.channel)
    }
}
