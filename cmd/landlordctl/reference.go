package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// referencePath is the command reference, in the repository, that writeReference writes.
const referencePath = "docs/cli.md"

// writeReference writes the reference of every command, as its --help says it, in Markdown:
// docs/cli.md is this, and a test holds it to the commands.
func writeReference(w io.Writer, root *cobra.Command) error {
	var commands []*cobra.Command
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				commands = append(commands, sub)
				walk(sub)
			}
		}
	}
	walk(root)
	slices.SortFunc(commands, func(a, b *cobra.Command) int { return strings.Compare(a.CommandPath(), b.CommandPath()) })

	var b strings.Builder
	fmt.Fprintf(&b, "<!-- Generated from landlordctl's commands (make cli-docs). Do not edit. -->\n\n")
	fmt.Fprintf(&b, "# landlordctl reference\n\n")
	fmt.Fprintf(&b, "%s\n\n", markdown(root.Long))
	fmt.Fprintf(&b, "Every command below is also `kubectl landlord COMMAND` once the CLI is installed as the kubectl\n"+
		"plugin. The flags every command takes are listed once, under [Global flags](#global-flags).\n\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "- [`%s`](#%s): %s\n", c.CommandPath(), anchor(c.CommandPath()), c.Short)
	}
	fmt.Fprintf(&b, "- [Global flags](#global-flags)\n- [Exit codes](#exit-codes)\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "\n## %s\n\n", c.CommandPath())
		if c.Long != "" {
			fmt.Fprintf(&b, "%s\n\n", markdown(c.Long))
		} else {
			fmt.Fprintf(&b, "%s\n\n", c.Short)
		}
		fmt.Fprintf(&b, "```text\n%s\n```\n", strings.TrimSpace(c.UseLine()))
		if c.Example != "" {
			fmt.Fprintf(&b, "\nExamples:\n\n```sh\n%s\n```\n", strings.TrimRight(dedent(c.Example), "\n"))
		}
		if flags := flagUsages(c.LocalNonPersistentFlags()); flags != "" {
			fmt.Fprintf(&b, "\nFlags:\n\n```text\n%s```\n", flags)
		}
	}
	fmt.Fprintf(&b, "\n## Global flags\n\nkubectl's connection flags, and the operator configuration.\n\n```text\n%s```\n", flagUsages(root.PersistentFlags()))
	fmt.Fprintf(&b, "\n## Exit codes\n\n```text\n%s\n```\n", strings.TrimPrefix(exitCodesHelp, "Exit codes:\n"))
	_, err := io.WriteString(w, b.String())
	return err
}

// flagUsages is a flag set as help lists it, with a default that names the home directory of the
// machine that wrote it (kubectl's --cache-dir) said as $HOME.
func flagUsages(flags *pflag.FlagSet) string {
	usages := flags.FlagUsages()
	if home, err := os.UserHomeDir(); err == nil && home != "" && home != "/" {
		usages = strings.ReplaceAll(usages, home+string(os.PathSeparator), "$HOME"+string(os.PathSeparator))
	}
	return usages
}

// markdown is help text as Markdown: its paragraphs as they are, and those indented, such as
// commands to run and lists of names, as preformatted blocks, which help prints them as.
func markdown(help string) string {
	paragraphs := strings.Split(strings.TrimSpace(help), "\n\n")
	for i, p := range paragraphs {
		lines := strings.Split(p, "\n")
		if !slices.ContainsFunc(lines, func(l string) bool { return !strings.HasPrefix(l, "  ") }) {
			paragraphs[i] = "```text\n" + dedent(p) + "\n```"
		}
	}
	return strings.Join(paragraphs, "\n\n")
}

// anchor is the fragment GitHub gives a Markdown heading.
func anchor(heading string) string {
	return strings.ReplaceAll(strings.ToLower(heading), " ", "-")
}

// dedent takes off the two spaces examples are indented with in help.
func dedent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "  ")
	}
	return strings.Join(lines, "\n")
}
