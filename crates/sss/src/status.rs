//! `sss status`: the cluster as a node daemon sees it, from its IDM page.

/// Arguments of `sss status`.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// The node whose daemon to ask (its address); default 127.0.0.1.
    #[arg(long, default_value = "127.0.0.1")]
    node: String,
}

/// Prints the daemon's tables, or the node itself from /proc and the
/// daemons that do run here when none serves it.
pub fn run(a: StatusArgs) -> Result<(), String> {
    print!("{}", sss_idm::status_report(&a.node));
    Ok(())
}
