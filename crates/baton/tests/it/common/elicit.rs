//! A client whose user answers the server's elicitation requests: the
//! person's channel inside an MCP client (Claude Code shows such a form).

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    Implementation,
};
use rmcp::service::RequestContext;
use rmcp::{ClientHandler, ErrorData, RoleClient};
use serde_json::json;

/// The person at the client: answers each form with the next scripted
/// answer (`option` or `option: text`), and remembers what was asked.
#[derive(Clone, Default)]
pub struct Person {
    answers: Arc<Mutex<VecDeque<String>>>,
    asked: Arc<Mutex<Vec<String>>>,
}

impl Person {
    /// A person who will give these answers, in order (then declines).
    pub fn answering(answers: &[&str]) -> Person {
        Person {
            answers: Arc::new(Mutex::new(answers.iter().map(|a| a.to_string()).collect())),
            asked: Arc::default(),
        }
    }

    /// The messages of the forms shown so far.
    pub fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

/// The test client: a plain client, or one whose user answers forms.
#[derive(Clone, Default)]
pub struct TestClient {
    /// The person at the client, if it declares elicitation.
    pub person: Option<Person>,
}

impl ClientHandler for TestClient {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        match &self.person {
            Some(p) => p.answer(request),
            None => Ok(ElicitResult::new(ElicitationAction::Decline)),
        }
    }

    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.person.is_some() {
            ClientCapabilities::builder().enable_elicitation().build()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(capabilities, Implementation::new("baton-test-client", "0"))
    }
}

impl Person {
    fn answer(&self, request: ElicitRequestParams) -> Result<ElicitResult, ErrorData> {
        let message = match &request {
            ElicitRequestParams::FormElicitationParams { message, .. } => message.clone(),
            _ => String::new(),
        };
        self.asked.lock().unwrap().push(message);
        let Some(answer) = self.answers.lock().unwrap().pop_front() else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let (word, feedback) = match answer.split_once(':') {
            Some((w, f)) => (w.trim().to_string(), Some(f.trim().to_string())),
            None => (answer, None),
        };
        let mut content = json!({"answer": word});
        if let Some(f) = feedback {
            content["feedback"] = json!(f);
        }
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(content))
    }
}

/// `baton serve` in `repo`, connected through a client whose user is `person`.
pub async fn spawn_with_person(repo: &Path, person: Person) -> super::Client {
    super::spawn_as(
        repo,
        &[],
        &[],
        TestClient {
            person: Some(person),
        },
    )
    .await
}

/// Like [`spawn_with_person`], with `env` for the server (the person's
/// configuration, say).
pub async fn spawn_with_person_env(
    repo: &Path,
    person: Person,
    env: &[(&str, &str)],
) -> super::Client {
    super::spawn_as(
        repo,
        &[],
        env,
        TestClient {
            person: Some(person),
        },
    )
    .await
}
