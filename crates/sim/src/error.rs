//! Errors of the simulator.

use thiserror::Error;

/// Anything that can go wrong configuring, running or writing out a simulation.
#[derive(Debug, Error)]
pub enum SimError {
    /// A name given on the command line or in a config did not parse.
    #[error("unknown {what} `{value}` (expected {expected})")]
    Parse {
        /// What was being parsed.
        what: &'static str,
        /// The offending text.
        value: String,
        /// What would have been accepted.
        expected: &'static str,
    },
    /// Parameters that cannot describe a runnable model.
    #[error("invalid parameters: {0}")]
    InvalidParams(String),
    /// Writing results failed.
    #[error("cannot write {path}: {source}")]
    Io {
        /// File being written.
        path: String,
        /// Underlying error.
        source: std::io::Error,
    },
    /// JSON encoding failed.
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
    /// Plot rendering failed.
    #[error("plot {path}: {message}")]
    Plot {
        /// File being drawn.
        path: String,
        /// Backend message.
        message: String,
    },
}
