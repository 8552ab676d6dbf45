//! Group tokens: a token repeated inside one group is a warning, in two
//! groups an error.

#![cfg(test)]

use crawlgate_policy::load;

const HEAD: &str = "[upstream]\nservers = [\"127.0.0.1:8000\"]\n";

#[test]
fn a_token_repeated_in_one_group_is_a_warning_and_renders_once() {
    let src = format!("{HEAD}\n[[group]]\nuser_agents = [\"GPTBot\", \"gptbot\"]\ndisallow = [\"/\"]\n");
    let loaded = load(&src, "t.toml").unwrap();
    let warnings: Vec<String> = loaded.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(
        warnings,
        vec!["t.toml:5:26: warning[repeated-token]: group.user_agents: `gptbot` is listed twice in this group (tokens are case-insensitive); the repeat is ignored"]
    );
    assert_eq!(loaded.policy.robots_txt().matches("User-agent:").count(), 1);
}

#[test]
fn a_token_in_two_groups_is_an_error() {
    let src = format!("{HEAD}\n[[group]]\nuser_agents = [\"GPTBot\"]\n\n[[group]]\nuser_agents = [\"gptbot\"]\n");
    let err = load(&src, "t.toml").err().map(|e| e.to_string()).unwrap_or_default();
    assert_eq!(err, "t.toml:8:16: group.user_agents: duplicate group for token `gptbot` (first at t.toml:5:16)");
}
