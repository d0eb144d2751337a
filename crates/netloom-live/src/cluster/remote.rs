//! One machine's worker as the coordinator holds it (`Remote`): started through its launcher,
//! asked over the control channel, its clock measured, and its death explained by its last
//! words on stderr (`MachineError`).

use super::channel::{self, Figures, FromWorker, PartError, ToWorker};
use super::clocks::{ClockSample, MachineClock};
use super::file::Machine;
use crate::run::event::{Event, Events};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// Lines of a worker's standard error kept to explain its death.
pub(super) const STDERR_LINES: usize = 20;

/// How long a machine may take to answer a request.
pub(super) const ANSWER_WAIT: Duration = Duration::from_secs(10);

/// How long a machine may take to stop and tear down.
pub(super) const STOP_WAIT: Duration = Duration::from_secs(60);

/// What went wrong with one machine's worker, as the coordinator sees it; each message names
/// the machine.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MachineError {
    /// Its launcher could not be started.
    #[error("machine {machine}: starting {launcher:?}: {source}")]
    Launch {
        /// The machine.
        machine: String,
        /// The launcher's program.
        launcher: String,
        /// Why.
        source: std::io::Error,
    },
    /// It runs another netloom.
    #[error("machine {machine} runs netloom {version}; this is netloom {}: install the same version on every machine", env!("CARGO_PKG_VERSION"))]
    Version {
        /// The machine.
        machine: String,
        /// Its netloom's version.
        version: String,
    },
    /// Its first words, or its words once its part was sent, were not the protocol's.
    #[error("machine {machine}: said {said:?} instead of {expected}")]
    SaidInstead {
        /// The machine.
        machine: String,
        /// What it said.
        said: Box<FromWorker>,
        /// What it should have said ("hello", "ready").
        expected: &'static str,
    },
    /// It did not answer in time.
    #[error("machine {machine} did not answer within {wait:?}")]
    Silent {
        /// The machine.
        machine: String,
        /// How long it was given.
        wait: Duration,
    },
    /// Its part was not up in time.
    #[error("machine {machine} was not up within {wait:?}")]
    NotUp {
        /// The machine.
        machine: String,
        /// How long it was given.
        wait: Duration,
    },
    /// Its worker said it failed, or its channel broke (what it said, or the channel's error).
    #[error("machine {machine}: {why}")]
    Failed {
        /// The machine.
        machine: String,
        /// Its words.
        why: String,
    },
    /// Its worker ended without a word: its exit status and the last line it (or its
    /// launcher) wrote on stderr.
    #[error("machine {machine}: worker ended ({status}){}", last.as_ref().map_or(String::new(), |l| format!(": {l}")))]
    Ended {
        /// The machine.
        machine: String,
        /// Its exit status (or why it is not known).
        status: String,
        /// Its last line on stderr.
        last: Option<String>,
    },
    /// It answered with an answer of another kind.
    #[error("machine {machine}: answered {to}with {answer:?}")]
    Unexpected {
        /// The machine.
        machine: String,
        /// What was asked, with a space after it ("a clock exchange "), or nothing.
        to: &'static str,
        /// Its answer.
        answer: Box<FromWorker>,
    },
    /// Its part refused or failed what it was asked.
    #[error("machine {machine}: {source}")]
    Refused {
        /// The machine.
        machine: String,
        /// Its error.
        source: PartError,
    },
    /// The machines refused a request (a link that does not exist): the request's fault, not
    /// theirs, so as they said it, every machine saying the same.
    #[error(transparent)]
    Request(PartError),
    /// There is no machine to ask.
    #[error("no machine")]
    NoMachine,
}

/// One machine's worker as the coordinator holds it.
pub(super) struct Remote {
    pub(super) machine: Machine,
    /// Its experiment: the run's name and the machine's.
    pub(super) experiment: String,
    pub(super) child: Mutex<Child>,
    /// Held while a message is written; `None` once closed.
    pub(super) stdin: Mutex<Option<ChildStdin>>,
    /// Held for a whole exchange (a message and its answer), so exchanges never interleave.
    pub(super) answers: Mutex<Receiver<FromWorker>>,
    /// Why it ended, once it did.
    pub(super) died: Arc<Mutex<Option<String>>>,
    pub(super) stderr: Arc<StderrTail>,
    pub(super) clock: Mutex<Option<MachineClock>>,
}

/// The last lines a worker (or its launcher) wrote on stderr, and whether it has closed it.
#[derive(Default)]
pub(super) struct StderrTail {
    /// The lines, and whether the stream has ended.
    lines: Mutex<(VecDeque<String>, bool)>,
    ended: Condvar,
}

impl StderrTail {
    /// Reads `stderr` to its end, keeping the last `STDERR_LINES` lines.
    pub(super) fn read(&self, stderr: impl std::io::Read) {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let mut lines = self.lines.lock().expect("no panics holding it");
            if lines.0.len() == STDERR_LINES {
                lines.0.pop_front();
            }
            lines.0.push_back(line);
        }
        self.lines.lock().expect("no panics holding it").1 = true;
        self.ended.notify_all();
    }

    /// The last line, once the stream has ended or `wait` has passed: a process that has
    /// exited may still have its last words in the pipe, read by the other thread.
    pub(super) fn last(&self, wait: Duration) -> Option<String> {
        let lines = self.lines.lock().expect("no panics holding it");
        let (lines, _) = self
            .ended
            .wait_timeout_while(lines, wait, |(_, ended)| !*ended)
            .expect("no panics holding it");
        lines.0.back().cloned()
    }
}

impl Remote {
    /// Starts the machine's worker through its launcher. The accuracy alarms it raises go to
    /// `events`.
    pub(super) fn launch(
        machine: &Machine,
        run: &str,
        events: Arc<Events>,
    ) -> Result<Remote, MachineError> {
        let mut command = machine.netloom_command(&["worker"]);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // Its own process group: a Ctrl-C at the coordinator's terminal is the coordinator's
        // to handle, by stopping every machine in order.
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        netloom_os::close_inherited_fds(&mut command);
        let mut child = command.spawn().map_err(|source| MachineError::Launch {
            machine: machine.name.clone(),
            launcher: machine.launcher[0].clone(),
            source,
        })?;
        let (stdin, stdout, stderr) = (
            child.stdin.take().expect("piped"),
            child.stdout.take().expect("piped"),
            child.stderr.take().expect("piped"),
        );
        let died = Arc::new(Mutex::new(None));
        let tail = Arc::new(StderrTail::default());
        {
            let tail = tail.clone();
            std::thread::spawn(move || tail.read(stderr));
        }
        let (tx, rx) = mpsc::channel();
        {
            let died = died.clone();
            let name = machine.name.clone();
            std::thread::spawn(move || {
                let mut stdout = BufReader::new(stdout);
                let why = loop {
                    match channel::receive::<FromWorker>(&mut stdout) {
                        Ok(Some(FromWorker::Failed(why))) => {
                            let _ = tx.send(FromWorker::Failed(why.clone()));
                            break why;
                        }
                        Ok(Some(FromWorker::Alarm(mut alarm))) => {
                            if let Event::AccuracyAlarm { machine, .. } = &mut alarm {
                                *machine = Some(name.clone());
                            }
                            events.publish(alarm)
                        }
                        Ok(Some(message)) => {
                            if tx.send(message).is_err() {
                                return;
                            }
                        }
                        Ok(None) => break String::new(),
                        Err(e) => break e.to_string(),
                    }
                };
                died.lock()
                    .expect("no panics holding it")
                    .get_or_insert(why);
            });
        }
        Ok(Remote {
            machine: machine.clone(),
            experiment: format!("{run}-{}", machine.name),
            child: Mutex::new(child),
            stdin: Mutex::new(Some(stdin)),
            answers: Mutex::new(rx),
            died,
            stderr: tail,
            clock: Mutex::new(None),
        })
    }

    /// Sends `message` and waits `wait` at most for the answer.
    pub(super) fn ask(
        &self,
        message: &ToWorker,
        wait: Duration,
    ) -> Result<FromWorker, MachineError> {
        let answers = self.answers.lock().expect("no panics holding it");
        // An answer that came too late for an earlier exchange is not this one's.
        while answers.try_recv().is_ok() {}
        self.send(message)?;
        self.answer(&answers, wait)
    }

    /// The worker's next answer, waiting `wait` at most.
    pub(super) fn answer(
        &self,
        answers: &Receiver<FromWorker>,
        wait: Duration,
    ) -> Result<FromWorker, MachineError> {
        match answers.recv_timeout(wait) {
            Ok(FromWorker::Failed(why)) => Err(MachineError::Failed {
                machine: self.machine.name.clone(),
                why,
            }),
            Ok(answer) => Ok(answer),
            Err(RecvTimeoutError::Timeout) => Err(MachineError::Silent {
                machine: self.machine.name.clone(),
                wait,
            }),
            Err(RecvTimeoutError::Disconnected) => Err(self.why_dead()),
        }
    }

    /// What `answer` carries in the kind of answer `pick` takes out; the worker's error, or
    /// an answer of another kind, becomes an error naming the machine.
    pub(super) fn carried<T>(
        &self,
        answer: FromWorker,
        pick: impl FnOnce(FromWorker) -> Result<Result<T, PartError>, FromWorker>,
    ) -> Result<T, MachineError> {
        match pick(answer) {
            Ok(carried) => carried.map_err(|source| MachineError::Refused {
                machine: self.machine.name.clone(),
                source,
            }),
            Err(other) => Err(MachineError::Unexpected {
                machine: self.machine.name.clone(),
                to: "",
                answer: Box::new(other),
            }),
        }
    }

    /// Writes `message` to the worker, without waiting for an answer.
    pub(super) fn send(&self, message: &ToWorker) -> Result<(), MachineError> {
        let mut stdin = self.stdin.lock().expect("no panics holding it");
        match stdin.as_mut() {
            Some(input) => channel::send(input, message).map_err(|_| self.why_dead()),
            None => Err(self.why_dead()),
        }
    }

    /// Whether its worker has ended.
    pub(super) fn dead(&self) -> bool {
        self.died.lock().expect("no panics holding it").is_some()
    }

    /// Why its worker ended, in one line: what it said, or its exit status and the last thing
    /// it (or its launcher: SSH, a shell without netloom) wrote.
    pub(super) fn why_dead(&self) -> MachineError {
        let said = self.died.lock().expect("no panics holding it").clone();
        let status = {
            let mut child = self.child.lock().expect("no panics holding it");
            // The worker closed its output; it exits right after.
            (0..50)
                .find_map(|_| match child.try_wait() {
                    Ok(None) => {
                        std::thread::sleep(Duration::from_millis(10));
                        None
                    }
                    Ok(Some(status)) => Some(status.to_string()),
                    Err(e) => Some(e.to_string()),
                })
                .unwrap_or_else(|| "still running".into())
        };
        // Not forever: a process the worker started may hold its stderr open.
        let last = self.stderr.last(Duration::from_millis(500));
        let machine = self.machine.name.clone();
        match said.filter(|s| !s.is_empty()) {
            Some(why) => MachineError::Failed { machine, why },
            None => MachineError::Ended {
                machine,
                status,
                last,
            },
        }
    }

    /// NTP's exchange: the offset of this machine's wall clock, assuming the two legs of the
    /// exchange take equally long (their difference is the error, at most half the round trip).
    pub(super) fn measure_clock(&self) -> Result<ClockSample, MachineError> {
        let sent_ns = channel::wall_ns();
        let answer = self.ask(&ToWorker::Time { sent_ns }, ANSWER_WAIT)?;
        let back_ns = channel::wall_ns();
        let FromWorker::Time { here_ns, .. } = answer else {
            return Err(MachineError::Unexpected {
                machine: self.machine.name.clone(),
                to: "a clock exchange ",
                answer: Box::new(answer),
            });
        };
        let middle = (i128::from(sent_ns) + i128::from(back_ns)) / 2;
        Ok(ClockSample {
            offset_ns: (i128::from(here_ns) - middle) as i64,
            round_trip_ns: back_ns.saturating_sub(sent_ns),
        })
    }

    /// Asks the worker (when alive) to stop, for its last figures.
    pub(super) fn stop(&self) -> Result<Option<Box<Figures>>, MachineError> {
        match self.dead() {
            true => Err(self.why_dead()),
            false => {
                let answer = self.ask(&ToWorker::Stop, STOP_WAIT)?;
                let figures = self.carried(answer, |a| match a {
                    FromWorker::Figures(f) => Ok(f),
                    other => Err(other),
                })?;
                Ok(Some(figures))
            }
        }
    }

    /// The hand-off datagrams a stopped worker received from each worker, if it says.
    pub(super) fn count(&self) -> Option<Vec<u64>> {
        match self.ask(&ToWorker::Count, ANSWER_WAIT) {
            Ok(FromWorker::Counted(received)) => Some(received),
            _ => None,
        }
    }

    /// Closes the worker's input, which ends one that has not started its part (and one that
    /// does not speak this version's protocol, so it is not asked to stop) or one that has
    /// stopped, and waits a moment for it to exit before killing it.
    pub(super) fn close(&self) {
        self.stdin.lock().expect("no panics holding it").take();
        let mut child = self.child.lock().expect("no panics holding it");
        let waited = (0..100).any(|_| {
            let done = matches!(child.try_wait(), Ok(Some(_)));
            if !done {
                std::thread::sleep(Duration::from_millis(50));
            }
            done
        });
        if !waited {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Removes whatever this machine's experiment left behind (its worker died): `netloom
    /// clean --name` there, through the launcher.
    pub(super) fn clean(&self) -> String {
        let out = self
            .machine
            .netloom_command(&["clean", "--name", &self.experiment])
            .stdin(Stdio::null())
            .output();
        match out {
            Ok(o) if o.status.success() => format!("cleaned machine {}", self.machine.name),
            Ok(o) => format!(
                "cleaning machine {} failed ({}): {}",
                self.machine.name,
                o.status,
                String::from_utf8_lossy(&o.stderr).trim()
            ),
            Err(e) => format!("cleaning machine {}: {e}", self.machine.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workers_last_words_are_waited_for_until_its_stderr_ends() {
        let tail = Arc::new(StderrTail::default());
        let reader = tail.clone();
        std::thread::spawn(move || {
            reader.read(Late(b"first\nsh: 1: /nonexistent/netloom: not found\n"))
        });
        assert_eq!(
            tail.last(Duration::from_secs(10)).as_deref(),
            Some("sh: 1: /nonexistent/netloom: not found")
        );
        // A stream that does not end is waited for no longer than asked.
        let open = StderrTail::default();
        let start = std::time::Instant::now();
        assert_eq!(open.last(Duration::from_millis(50)), None);
        assert!(start.elapsed() >= Duration::from_millis(50));
    }

    /// Gives its bytes only after a pause, as a pipe whose writer exited a moment ago.
    struct Late(&'static [u8]);

    impl std::io::Read for Late {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            std::thread::sleep(Duration::from_millis(100));
            let n = self.0.len().min(buf.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
}
