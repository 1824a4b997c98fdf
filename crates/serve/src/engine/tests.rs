//! The engine's time-driven rules under tokio's paused clock, against a scripted executor: the
//! queue and its bound, a question nobody answers, the stop grace. Minutes of the rules' time
//! pass in milliseconds, and each wait is measured on the clock the engine itself reads, so an
//! answer too early or too late fails, not only one that never comes.

use super::*;
use a2a_mod_config::ServeAgentConfig;
use std::time::Duration;
use tokio::time::Instant;

/// What a run does, by its message's first word.
struct Scripted {
    /// Each question's reply and the moment it came (`ask`).
    replies: Arc<Mutex<Vec<(Reply, Instant)>>>,
}

impl Executor for Scripted {
    fn run(
        &self,
        job: Job,
        reports: mpsc::Sender<Report>,
        mut stop: watch::Receiver<bool>,
        mut replies: mpsc::UnboundedReceiver<Reply>,
    ) -> BoxFuture<'static, ()> {
        let seen = self.replies.clone();
        Box::pin(async move {
            let done = |text: &str| Report::Ended {
                state: TaskState::Completed,
                words: None,
                metadata: serde_json::Map::from_iter([("said".into(), text.into())]),
            };
            match job.text.split_whitespace().next().unwrap_or("") {
                // Asks, and goes on with whatever the reply is.
                "ask" => {
                    let ask = Report::Ask {
                        line: "Bash: rm -rf build".into(),
                        data: None,
                    };
                    let _ = reports.send(ask).await;
                    if let Some(r) = replies.recv().await {
                        lock(&seen).push((r, Instant::now()));
                    }
                    let _ = reports.send(done("went on")).await;
                }
                // Runs until it is stopped.
                "hold" => stopped(&mut stop).await,
                // Works for a while, however it is asked to stop.
                "slow" => {
                    tokio::time::sleep(Duration::from_secs(10)).await;
                    let _ = reports.send(done("slow")).await;
                }
                _ => {
                    let _ = reports.send(done("quick")).await;
                }
            }
        })
    }
}

struct Rig {
    engine: Arc<Engine>,
    agent: Arc<Agent>,
    replies: Arc<Mutex<Vec<(Reply, Instant)>>>,
    _dir: tempfile::TempDir,
}

fn rig(limits: Limits, config: ServeAgentConfig) -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let store = ServedStore::open(&dir.path().join("serve.db")).unwrap();
    let replies = Arc::new(Mutex::new(Vec::new()));
    let exec: Arc<dyn Executor> = Arc::new(Scripted {
        replies: replies.clone(),
    });
    let executors = Executors {
        claude: exec.clone(),
        exec,
    };
    let agent = Arc::new(Agent {
        name: "a".into(),
        description: String::new(),
        dir: dir.path().to_path_buf(),
        config,
    });
    Rig {
        engine: Arc::new(Engine::open(store, executors, limits).unwrap()),
        agent,
        replies,
        _dir: dir,
    }
}

fn limits(max_concurrent: usize, max_queued: usize) -> Limits {
    Limits {
        max_concurrent,
        max_queued,
        max_live_per_owner: None,
        per_token_daily_usd: None,
    }
}

fn message(text: &str) -> Incoming {
    Incoming {
        message_id: a2a_mod_os::ids::uuid_v4(),
        text: text.into(),
        task_id: None,
        context_id: None,
        files: Vec::new(),
        push: None,
    }
}

impl Rig {
    fn send(&self, text: &str) -> Result<Arc<Live>, A2aError> {
        self.engine.send("local", &self.agent, message(text))
    }

    fn said(t: &Task) -> Option<&str> {
        t.metadata.get("said").and_then(serde_json::Value::as_str)
    }
}

/// Waits until `live`'s task is in `state` (on the engine's own notifications, no polling).
async fn reaches(live: &Live, state: TaskState) {
    let mut rx = live.told.subscribe();
    let _ = rx.wait_for(|_| live.snapshot().state == state).await;
}

/// Beyond `max_concurrent` a task waits, `submitted`, and beyond `max_queued` a send is refused
/// busy, saying which setting; once the run ahead ends, the waiting one runs.
#[tokio::test(start_paused = true)]
async fn a_full_queue_refuses_and_a_queued_task_runs_when_a_slot_frees() {
    let r = rig(limits(1, 1), ServeAgentConfig::default());
    let first = r.send("hold").unwrap();
    reaches(&first, TaskState::Working).await;
    let queued = r.send("quick").unwrap();
    // Nothing makes the queued one start while the slot is held, however long.
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(queued.snapshot().state, TaskState::Submitted);
    let refused = r.send("quick").err().expect("a full queue refuses");
    assert_eq!(refused.code, SERVER_BUSY);
    assert!(
        refused.message.contains("serve.max_queued"),
        "{}",
        refused.message
    );

    let canceled = r
        .engine
        .cancel("local", "a", &first.snapshot().id)
        .await
        .unwrap();
    assert_eq!(canceled.state, TaskState::Canceled);
    let ran = Engine::settled(&queued).await;
    assert_eq!(ran.state, TaskState::Completed);
    assert_eq!(Rig::said(&ran), Some("quick"));
    // Its place in the queue is free again.
    let again = r.send("quick").unwrap();
    assert_eq!(Engine::settled(&again).await.state, TaskState::Completed);
}

/// A question nobody answers: the task waits `input-required` exactly `ask_timeout_s`, then the
/// run is told nobody answered and goes on, and the task says why it went on.
#[tokio::test(start_paused = true)]
async fn a_question_nobody_answers_times_out_after_the_agents_wait_and_the_run_goes_on() {
    for (config, secs) in [
        (ServeAgentConfig::default(), 600),
        (
            ServeAgentConfig {
                ask_timeout_s: Some(2.0),
                ..ServeAgentConfig::default()
            },
            2,
        ),
    ] {
        let r = rig(limits(2, 4), config);
        let live = r.send("ask").unwrap();
        reaches(&live, TaskState::InputRequired).await;
        let asked = Instant::now();
        let t = Engine::settled(&live).await;
        assert_eq!(t.state, TaskState::Completed, "{secs} s");
        assert_eq!(Rig::said(&t), Some("went on"));
        let replies = lock(&r.replies);
        let [(reply, at)] = replies.as_slice() else {
            panic!("one reply to one question: {replies:?}");
        };
        assert_eq!(*reply, Reply::TimedOut(secs));
        assert_eq!(at.duration_since(asked), Duration::from_secs(secs));
        let told = live.since(0).0;
        assert!(
            told.iter().any(|e| e
                .status_text
                .as_deref()
                .is_some_and(|s| s.contains(&format!("No answer within {secs} s")))),
            "the task says why it went on: {told:?}"
        );
    }
}

/// An answer before the wait is over is the run's one reply: the timer then answers nothing.
#[tokio::test(start_paused = true)]
async fn an_answer_in_time_is_the_only_reply() {
    let r = rig(limits(2, 4), ServeAgentConfig::default());
    let live = r.send("ask").unwrap();
    reaches(&live, TaskState::InputRequired).await;
    tokio::time::sleep(Duration::from_secs(599)).await;
    let mut answer = message("yes");
    answer.task_id = Some(live.snapshot().id);
    r.engine.send("local", &r.agent, answer).unwrap();
    assert_eq!(Engine::settled(&live).await.state, TaskState::Completed);
    // Past the wait: the timer finds the question answered.
    tokio::time::sleep(Duration::from_secs(60)).await;
    let replies = lock(&r.replies);
    assert_eq!(
        replies.iter().map(|(r, _)| r.clone()).collect::<Vec<_>>(),
        [Reply::Said("yes".into())]
    );
}

/// A stopping server gives the runs `grace` to end by themselves: one that does is kept as it
/// ended; one still going when the grace is over is stopped and ends failed, saying so.
#[tokio::test(start_paused = true)]
async fn shutdown_waits_the_grace_then_stops_what_still_runs() {
    let r = rig(limits(2, 4), ServeAgentConfig::default());
    let slow = r.send("slow").unwrap();
    let held = r.send("hold").unwrap();
    // Both runs started before the grace's clock does: a run's start waits on a real process
    // (`git`, to see whether the folder is a repository), and the paused clock jumps ahead
    // while nothing else is ready, so the grace could be over before "slow" ever ran (seen in
    // about 1 run in 15).
    reaches(&slow, TaskState::Working).await;
    reaches(&held, TaskState::Working).await;
    let began = Instant::now();
    r.engine.shutdown(Duration::from_secs(30)).await;
    assert_eq!(began.elapsed(), Duration::from_secs(30));
    let slow = slow.snapshot();
    assert_eq!(
        (slow.state, Rig::said(&slow)),
        (TaskState::Completed, Some("slow"))
    );
    let held = held.snapshot();
    assert_eq!(held.state, TaskState::Failed);
    assert_eq!(held.status_text.as_deref(), Some(STOPPED));
    let refused = r
        .send("quick")
        .err()
        .expect("a stopping server takes no task");
    assert_eq!(refused.code, SERVER_BUSY);
}
