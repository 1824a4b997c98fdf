//! What comes back from a worker and where it is kept: every artifact of an ended or waiting task
//! saved under `state/results/<session>/<task>/` ([`artifacts`]), and worker text too long for
//! Claude cut, with the whole saved beside it ([`overflow`]); and the one builder of what Claude
//! reads about a task, in a tool result, a hook's context or the task list ([`note`]).

#![forbid(unsafe_code)]

pub mod artifacts;
pub mod note;
pub mod overflow;
