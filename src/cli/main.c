/* main.c — uraid's entry point: find the subcommand and run it. */
#include "cli.h"

#include "core/log.h"

#include <stdio.h>
#include <string.h>

#ifndef URAID_VERSION
#define URAID_VERSION "unknown"
#endif

static int cmd_version(int argc, char **argv);
static int cmd_help(int argc, char **argv);

static const struct cli_command commands[] = {
	{ "serve", cmd_serve, "assemble members and export the volume over NBD" },
	{ "create", cmd_create, "write md superblocks making a new array (mdadm --create)" },
	{ "probe", cmd_probe, "show what members hold: partitions, arrays, LVs, LUKS (lsblk for images)" },
	{ "detect", cmd_detect, "find the geometry of RAID0/5 members whose metadata is gone" },
	{ "examine", cmd_examine, "print members' md superblocks (mdadm --examine)" },
	{ "check", cmd_check, "compare (or --repair) the copies of a RAID1/10 or the parity of a RAID5/6 (md check)" },
	{ "add", cmd_add, "add a member to an md array, offline or running, and rebuild onto it (mdadm --add)" },
	{ "detail", cmd_detail, "show the arrays a running serve serves (mdadm --detail)" },
	{ "monitor", cmd_monitor, "stream the md events of a running serve (mdadm --monitor)" },
	{ "fail", cmd_fail, "mark a member of a running array faulty (mdadm --fail)" },
	{ "remove", cmd_remove, "take a faulty or spare member out of a running array (mdadm --remove)" },
	{ "rebuild", cmd_rebuild, "rebuild members being recovered, resumable (md recovery)" },
	{ "replace", cmd_replace, "rebuild a member onto a new one while it stays in the array (mdadm --replace)" },
	{ "grow", cmd_grow, "reshape an md array, change its level, size or bitmap, offline or served (mdadm --grow)" },
	{ "zero-superblock", cmd_zero_superblock, "erase members' md superblocks (mdadm --zero-superblock)" },
	{ "luks-format", cmd_luks_format, "write a new LUKS2 header (cryptsetup luksFormat)" },
	{ "luks-dump", cmd_luks_dump, "show a LUKS header (cryptsetup luksDump)" },
	{ "luks-add-key", cmd_luks_add_key, "add a LUKS passphrase (cryptsetup luksAddKey)" },
	{ "luks-remove-key", cmd_luks_remove_key, "remove a LUKS passphrase (cryptsetup luksRemoveKey)" },
	{ "luks-change-key", cmd_luks_change_key, "change a LUKS passphrase (cryptsetup luksChangeKey)" },
	{ "luks-kill-slot", cmd_luks_kill_slot, "remove a LUKS key slot by number (cryptsetup luksKillSlot)" },
	{ "luks-uuid", cmd_luks_uuid, "show or set a LUKS UUID (cryptsetup luksUUID)" },
	{ "is-luks", cmd_is_luks, "exit 0 if it holds a LUKS header (cryptsetup isLuks)" },
	{ "luks-header-backup", cmd_luks_header_backup, "save the LUKS header area to a file (cryptsetup luksHeaderBackup)" },
	{ "luks-header-restore", cmd_luks_header_restore, "write a LUKS header backup back (cryptsetup luksHeaderRestore)" },
	{ "bench", cmd_bench, "measure layouts and name the bottleneck" },
	{ "version", cmd_version, "print the version" },
	{ "help", cmd_help, "list the commands" },
};

static const size_t n_commands = sizeof(commands) / sizeof(commands[0]);

int cli_fail(const char *what, int r)
{
	if (what && *what)
		fprintf(stderr, "uraid: %s: %s\n", what, err_detail(r));
	else
		fprintf(stderr, "uraid: %s\n", err_detail(r));
	return 1;
}

int cli_usage_error(const char *cmd, const char *what)
{
	if (what)
		fprintf(stderr, "uraid: %s: %s (see 'uraid %s --help')\n", cmd, what, cmd);
	else
		fprintf(stderr, "uraid: see 'uraid %s --help'\n", cmd);
	return 2;
}

static int cmd_version(int argc, char **argv)
{
	(void)argc, (void)argv;
	printf("uraid %s\n", URAID_VERSION);
	return 0;
}

static int cmd_help(int argc, char **argv)
{
	(void)argc, (void)argv;
	printf("usage: uraid COMMAND [OPTIONS] [ARGS]\n\ncommands:\n");
	for (size_t i = 0; i < n_commands; i++)
		printf("  %-16s %s\n", commands[i].name, commands[i].summary);
	printf("\n'uraid COMMAND --help' describes one command.\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		cmd_help(0, NULL);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
		return cmd_help(0, NULL);
	if (strcmp(argv[1], "--version") == 0)
		return cmd_version(0, NULL);
	for (size_t i = 0; i < n_commands; i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "uraid: unknown command '%s' (try 'uraid help')\n", argv[1]);
	return 2;
}
