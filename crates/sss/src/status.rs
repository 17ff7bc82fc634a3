//! `sss status`: the cluster as a node daemon sees it, from its IDM page.

/// Arguments of `sss status`.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// The node whose daemon to ask (its address); default 127.0.0.1.
    #[arg(long, default_value = "127.0.0.1")]
    node: String,
}

/// Prints the table, or explains that no daemon runs there.
pub fn run(a: StatusArgs) -> Result<(), String> {
    match sss_idm::status_table(&a.node) {
        Some(t) => {
            print!("{t}");
            Ok(())
        }
        None => Err(format!(
            "no node daemon serves {} (sss run starts one per host for the length of a job; or run `sssd --node {} --peers …`)",
            a.node, a.node
        )),
    }
}
