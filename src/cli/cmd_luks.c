/* cmd_luks.c — the luks-* commands, in cryptsetup's vocabulary:
 *
 *   luks-format      write a new LUKS2 header (asks YES unless --batch)
 *   luks-dump        show a header (no key material unless
 *                    --dump-volume-key, which asks YES and the passphrase)
 *   luks-add-key     a new passphrase in a free key slot
 *   luks-remove-key  remove the key slot the given passphrase opens
 *   luks-change-key  replace a passphrase, keeping its slot number
 *   luks-kill-slot   remove key slot N, passphrase unknown (not the last one
 *                    that opens the volume without --force)
 *   luks-uuid        show the UUID, or set it with --uuid
 *   is-luks          exit 0 when TARGET... holds a LUKS header, 1 when not
 *   luks-header-backup / luks-header-restore
 *                    the header area to and from a file in cryptsetup's
 *                    format (src/luks/luks_backup.c); restore refuses a
 *                    backup that does not match without --force
 *
 * TARGET... is what the stack assembles to (stack_open with no_luks), so
 * `uraid luks-format a.img b.img` formats the RAID1 that a.img and b.img
 * hold.  Every command that changes the header writes both LUKS2 copies,
 * which also repairs a damaged one; luks-dump, is-luks, luks-uuid without
 * --uuid and luks-header-backup never write. */
#include "cli.h"
#include "stack/passphrase.h"
#include "stack/stack.h"

#include "core/log.h"
#include "luks/luks.h"
#include "md/probe.h"
#include "member/member.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum luks_cmd {
	LC_FORMAT,
	LC_DUMP,
	LC_ADD,
	LC_REMOVE,
	LC_CHANGE,
	LC_KILL,
	LC_UUID,
	LC_IS_LUKS,
	LC_BACKUP,
	LC_RESTORE,
};

struct luks_args {
	enum luks_cmd cmd;
	const char *name;
	bool batch, dump_vk, force, verbose;
	const char *key_file, *new_key_file, *label, *uuid, *backup_file;
	int key_slot;
	struct luks2_format_opts fmt;
	struct stack_opts stack;
};

enum {
	OPT_TYPE = 256,
	OPT_SECTOR,
	OPT_KEY_SIZE,
	OPT_PBKDF,
	OPT_PBKDF_MEMORY,
	OPT_PBKDF_PARALLEL,
	OPT_ITER_TIME,
	OPT_FORCE_ITER,
	OPT_LABEL,
	OPT_NEW_KEY_FILE,
	OPT_DUMP_VK,
	OPT_CIPHER,
	OPT_HASH,
	OPT_FORCE,
	OPT_UUID,
	OPT_BACKUP_FILE,
};

static void luks_usage(const struct luks_args *a, FILE *f)
{
	fprintf(f, "usage: uraid %s [OPTIONS] TARGET...%s\n", a->name,
	        a->cmd == LC_KILL ? " N" : "");
	switch (a->cmd) {
	case LC_FORMAT:
		fprintf(
		    f, "Write a new LUKS2 header on the volume TARGET... assembles to.\n"
		       "  -q, --batch               do not ask for confirmation\n"
		       "      --type luks2          the only type uraid writes\n"
		       "      --cipher SPEC         aes-xts-plain64 (default)\n"
		       "      --key-size BITS       256 or 512 (default 512)\n"
		       "      --sector-size BYTES   512 or 4096 (default where the target allows)\n"
		       "      --label LABEL\n");
		break;
	case LC_DUMP:
		fprintf(f, "Show the LUKS header of the volume TARGET... assembles to.\n"
		           "      --dump-volume-key     also the volume key (asks YES and the\n"
		           "                            passphrase; --batch skips the question)\n");
		break;
	case LC_ADD:
		fprintf(f, "Add a passphrase in a free key slot (or --key-slot N).\n");
		break;
	case LC_REMOVE:
		fprintf(f, "Remove the key slot that the passphrase opens.\n");
		break;
	case LC_CHANGE:
		fprintf(f, "Replace the passphrase of the slot it opens (same slot).\n");
		break;
	case LC_KILL:
		fprintf(f,
		        "Remove key slot N without its passphrase.\n"
		        "      --force               also the last key slot that opens the volume\n"
		        "                            (and write on a RAID5/6 that is degraded and\n"
		        "                            was not shut down cleanly)\n");
		return;
	case LC_UUID:
		fprintf(f, "Show the UUID of the LUKS header, or set it.\n"
		           "      --uuid UUID           the new UUID (asks YES unless --batch)\n"
		           "  -q, --batch               do not ask for confirmation\n");
		return;
	case LC_IS_LUKS:
		fprintf(
		    f, "Exit 0 when the volume TARGET... assembles to holds a LUKS header, 1 when\n"
		       "not.\n"
		       "  -v, --verbose             say which\n");
		return;
	case LC_BACKUP:
		fprintf(f, "Copy the LUKS header area to a new file (cryptsetup's format).\n"
		           "      --header-backup-file FILE   the file to create\n");
		return;
	case LC_RESTORE:
		fprintf(f,
		        "Write the LUKS header area held by a backup file back.\n"
		        "      --header-backup-file FILE   the backup\n"
		        "      --force               also when the device's header is missing or\n"
		        "                            differs (UUID, layout); and write on a\n"
		        "                            RAID5/6 that is degraded and was not shut\n"
		        "                            down cleanly\n");
		return;
	}
	fprintf(f, "  -d, --key-file FILE       the (existing) passphrase: whole file\n");
	if (a->cmd == LC_ADD || a->cmd == LC_CHANGE)
		fprintf(f, "      --new-key-file FILE   the new passphrase\n"
		           "  -S, --key-slot N          slot to use\n");
	if (a->cmd == LC_FORMAT || a->cmd == LC_ADD || a->cmd == LC_CHANGE)
		fprintf(
		    f, "      --pbkdf KDF           argon2id (default), argon2i, pbkdf2\n"
		       "      --pbkdf-memory KIB    argon2 memory (default: 1 GiB or half of RAM)\n"
		       "      --pbkdf-parallel N    argon2 threads (default: up to 4)\n"
		       "      --iter-time MS        unlock time to aim for (default 2000)\n"
		       "      --pbkdf-force-iterations N   skip the benchmark\n"
		       "      --hash HASH           pbkdf2 hash (default sha256)\n");
	if (a->cmd != LC_DUMP)
		fprintf(
		    f,
		    "      --force               write on a RAID5/6 that is degraded and was not\n"
		    "                            shut down cleanly (md's write hole)\n");
	fprintf(f, "Without --key-file, passphrases are asked on the terminal, or read\n"
	           "as one line from standard input when that is not a terminal.\n");
}

static int luks_u32(const char *s, const char *what, uint32_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || !*s || v > UINT32_MAX) {
		fprintf(stderr, "uraid: bad %s '%s'\n", what, s);
		return -1;
	}
	*out = (uint32_t)v;
	return 0;
}

/* Returns the index of the first TARGET, or -2 (usage) / -1 (help). */
static int luks_parse(struct luks_args *a, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"batch", no_argument, NULL, 'q'},
	    {"batch-mode", no_argument, NULL, 'q'},
	    {"key-file", required_argument, NULL, 'd'},
	    {"new-key-file", required_argument, NULL, OPT_NEW_KEY_FILE},
	    {"key-slot", required_argument, NULL, 'S'},
	    {"type", required_argument, NULL, OPT_TYPE},
	    {"cipher", required_argument, NULL, OPT_CIPHER},
	    {"sector-size", required_argument, NULL, OPT_SECTOR},
	    {"key-size", required_argument, NULL, OPT_KEY_SIZE},
	    {"pbkdf", required_argument, NULL, OPT_PBKDF},
	    {"pbkdf-memory", required_argument, NULL, OPT_PBKDF_MEMORY},
	    {"pbkdf-parallel", required_argument, NULL, OPT_PBKDF_PARALLEL},
	    {"iter-time", required_argument, NULL, OPT_ITER_TIME},
	    {"pbkdf-force-iterations", required_argument, NULL, OPT_FORCE_ITER},
	    {"hash", required_argument, NULL, OPT_HASH},
	    {"label", required_argument, NULL, OPT_LABEL},
	    {"dump-volume-key", no_argument, NULL, OPT_DUMP_VK},
	    {"direct", no_argument, NULL, 'D'},
	    {"force", no_argument, NULL, OPT_FORCE},
	    {"uuid", required_argument, NULL, OPT_UUID},
	    {"header-backup-file", required_argument, NULL, OPT_BACKUP_FILE},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	struct luks_pbkdf_opts *p = &a->fmt.pbkdf;
	uint32_t v;
	int c;

	a->key_slot = -1;
	p->type = LUKS_KDF_ARGON2ID;
	optind = 1;
	while ((c = getopt_long(argc, argv, "qd:S:Dvh", opts, NULL)) != -1) {
		switch (c) {
		case 'q':
			a->batch = true;
			break;
		case 'd':
			a->key_file = optarg;
			break;
		case OPT_FORCE:
			a->force = true;
			a->stack.start_dirty_degraded = true;
			break;
		case OPT_UUID:
			a->uuid = optarg;
			break;
		case OPT_BACKUP_FILE:
			a->backup_file = optarg;
			break;
		case 'v':
			a->verbose = true;
			break;
		case OPT_NEW_KEY_FILE:
			a->new_key_file = optarg;
			break;
		case 'S':
			if (luks_u32(optarg, "key slot", &v) < 0 || v >= LUKS_SLOTS_MAX)
				return -2;
			a->key_slot = (int)v;
			break;
		case OPT_TYPE:
			if (strcmp(optarg, "luks2") != 0) {
				fprintf(stderr,
				        "uraid: %s: only --type luks2 can be written "
				        "(LUKS1 volumes open, but are not created)\n",
				        a->name);
				return -2;
			}
			break;
		case OPT_CIPHER:
			a->fmt.cipher = optarg;
			break;
		case OPT_SECTOR:
			if (luks_u32(optarg, "sector size", &a->fmt.sector_size) < 0)
				return -2;
			break;
		case OPT_KEY_SIZE:
			if (luks_u32(optarg, "key size", &v) < 0 || v % 8)
				return -2;
			a->fmt.key_bytes = v / 8;
			break;
		case OPT_PBKDF:
			if (luks_kdf_parse(optarg, &p->type) < 0) {
				fprintf(stderr, "uraid: unknown --pbkdf '%s'\n", optarg);
				return -2;
			}
			break;
		case OPT_PBKDF_MEMORY:
			if (luks_u32(optarg, "--pbkdf-memory", &p->memory_kib) < 0)
				return -2;
			break;
		case OPT_PBKDF_PARALLEL:
			if (luks_u32(optarg, "--pbkdf-parallel", &p->cpus) < 0)
				return -2;
			break;
		case OPT_ITER_TIME:
			if (luks_u32(optarg, "--iter-time", &p->iter_ms) < 0)
				return -2;
			break;
		case OPT_FORCE_ITER:
			if (luks_u32(optarg, "--pbkdf-force-iterations", &p->force_iter) < 0)
				return -2;
			break;
		case OPT_HASH:
			p->hash = optarg;
			break;
		case OPT_LABEL:
			a->fmt.label = optarg;
			break;
		case OPT_DUMP_VK:
			a->dump_vk = true;
			break;
		case 'D':
			a->stack.direct = true;
			break;
		case 'h':
			luks_usage(a, stdout);
			return -1;
		default:
			return -2;
		}
	}
	if (optind + (a->cmd == LC_KILL) >= argc) {
		luks_usage(a, stderr);
		return -2;
	}
	if ((a->cmd == LC_BACKUP || a->cmd == LC_RESTORE) && !a->backup_file) {
		fprintf(stderr, "uraid: %s: --header-backup-file FILE is required\n", a->name);
		return -2;
	}
	if ((a->uuid && a->cmd != LC_UUID) ||
	    (a->backup_file && a->cmd != LC_BACKUP && a->cmd != LC_RESTORE) ||
	    (a->verbose && a->cmd != LC_IS_LUKS)) {
		fprintf(stderr,
		        "uraid: %s: --uuid is for luks-uuid, --header-backup-file for "
		        "luks-header-backup and luks-header-restore, --verbose for is-luks\n",
		        a->name);
		return -2;
	}
	return optind;
}

/* "uraid: CMD: VOLUME: detail", the volume named once: the LUKS code
 * names it in most of its details already. */
static int luks_fail(const struct luks_args *a, const struct vol *dev, int r)
{
	const char *d = err_detail(r);
	size_t n = strlen(dev->name);

	if (strncmp(d, dev->name, n) == 0 && d[n] == ':')
		fprintf(stderr, "uraid: %s: %s\n", a->name, d);
	else
		fprintf(stderr, "uraid: %s: %s: %s\n", a->name, dev->name, d);
	return 1;
}

static int luks_do_format(struct luks_args *a, struct vol *dev)
{
	struct luks_secret *pass = NULL;
	const char *what;
	char q[512], held[160] = "";
	int r;

	/* As cryptsetup: what the target holds is named in the question, and
	 * --batch, which asks nothing, says what it overwrites. */
	err_clear();
	r = probe_member(dev, dev->name, &what);
	if (r < 0)
		return luks_fail(a, dev, r);
	if (r > 0 && a->batch)
		fprintf(stderr, "uraid: %s: %s holds %s; overwriting it (--batch)\n", a->name,
		        dev->name, what);
	if (r > 0)
		snprintf(held, sizeof(held), "%s holds %s.\n", dev->name, what);
	if (!a->batch) {
		snprintf(q, sizeof(q),
		         "%sWARNING: this will overwrite data on %s irrevocably.\n"
		         "Are you sure? (Type 'YES' in capital letters): ",
		         held, dev->name);
		if (passphrase_confirm(q) < 0) {
			fprintf(stderr, "uraid: %s: not confirmed, nothing written\n", a->name);
			return 1;
		}
	}
	r = passphrase_read(a->key_file, "Enter passphrase for the new volume: ", true, &pass);
	if (r < 0)
		return cli_fail(a->name, r);
	r = luks2_format(dev, &a->fmt, pass);
	luks_secret_free(pass);
	if (r < 0)
		return luks_fail(a, dev, r);
	return 0;
}

/* Load the header and unlock it with the existing passphrase. */
static int luks_unlock_existing(struct luks_args *a, struct vol *dev, struct luks_hdr *h,
                                struct luks_secret **vk)
{
	struct luks_secret *pass = NULL;
	char prompt[300];
	int r;

	snprintf(prompt, sizeof(prompt), "Enter passphrase for %s: ", dev->name);
	r = passphrase_read(a->key_file, prompt, false, &pass);
	if (r < 0)
		return r;
	r = luks_unlock(h, dev, a->cmd == LC_ADD ? -1 : a->key_slot, pass, vk);
	luks_secret_free(pass);
	return r;
}

static int luks_do_keys(struct luks_args *a, struct vol *dev, struct luks_hdr *h)
{
	struct luks_secret *vk = NULL, *npass = NULL;
	int slot, r, active = 0;

	slot = luks_unlock_existing(a, dev, h, &vk);
	if (slot < 0)
		return luks_fail(a, dev, slot);
	if (a->cmd == LC_REMOVE) {
		for (int i = 0; i < h->nslots; i++)
			active += h->slots[i].active;
		if (active == 1 && !a->batch &&
		    passphrase_confirm("This is the last key slot: the volume will "
		                       "become inaccessible.\nAre you sure? (Type "
		                       "'YES' in capital letters): ") < 0) {
			fprintf(stderr, "uraid: %s: not confirmed, nothing written\n", a->name);
			r = -ECANCELED;
			goto out_quiet;
		}
		r = luks2_keyslot_remove(h, dev, slot);
		if (r == 0)
			printf("key slot %d removed\n", slot);
		goto out;
	}
	if (a->cmd == LC_ADD && a->key_slot >= 0 && h->slots[a->key_slot].active) {
		r = err_set(-EEXIST, "key slot %d is in use", a->key_slot);
		goto out;
	}
	r = passphrase_read(a->new_key_file, "Enter new passphrase: ", true, &npass);
	if (r < 0)
		goto out;
	/* Inherit the cipher's key size: the new slot holds the same key. */
	r = luks2_keyslot_store(h, dev, a->cmd == LC_ADD ? a->key_slot : slot, vk, npass,
	                        &a->fmt.pbkdf);
	if (r >= 0) {
		printf("key slot %d %s\n", r, a->cmd == LC_ADD ? "added" : "changed");
		r = 0;
	}
out:
	if (r < 0)
		luks_fail(a, dev, r);
out_quiet:
	luks_secret_free(npass);
	luks_secret_free(vk);
	return r < 0 ? 1 : 0;
}

static int luks_do_dump(struct luks_args *a, struct vol *dev, struct luks_hdr *h)
{
	struct luks_secret *vk = NULL;
	int r;

	if (a->dump_vk) {
		if (!a->batch &&
		    passphrase_confirm("The volume key lets anyone who has it read "
		                       "the volume, whatever its passphrases.\n"
		                       "Dump it? (Type 'YES' in capital letters): ") < 0) {
			fprintf(stderr, "uraid: %s: not confirmed\n", a->name);
			return 1;
		}
		r = luks_unlock_existing(a, dev, h, &vk);
		if (r < 0)
			return luks_fail(a, dev, r);
	}
	luks_dump(h, vk, stdout);
	luks_secret_free(vk);
	return 0;
}

/* luks-kill-slot: the slot goes without its passphrase, but not the last
 * one that opens the volume unless --force (cryptsetup asks there). */
static int luks_do_kill(struct luks_args *a, struct vol *dev, struct luks_hdr *h, const char *n)
{
	uint32_t slot;
	int others = 0, r;

	if (luks_u32(n, "key slot", &slot) < 0)
		return 2;
	if (slot >= (uint32_t)h->nslots || !h->slots[slot].active) {
		fprintf(stderr, "uraid: %s: %s: key slot %u is not active; nothing written\n",
		        a->name, dev->name, slot);
		return 1;
	}
	for (int i = 0; i < h->nslots; i++)
		others += i != (int)slot && h->slots[i].active && luks_slot_bound(h, i);
	if (luks_slot_bound(h, (int)slot) && others == 0 && !a->force) {
		fprintf(stderr,
		        "uraid: %s: %s: key slot %u is the last one that opens the volume: "
		        "without it the data cannot be read; nothing written (--force removes "
		        "it)\n",
		        a->name, dev->name, slot);
		return 1;
	}
	r = luks_keyslot_kill(h, dev, (int)slot);
	if (r < 0)
		return cli_fail(a->name, r);
	printf("key slot %u removed\n", slot);
	return 0;
}

static int luks_do_uuid(struct luks_args *a, struct vol *dev, struct luks_hdr *h)
{
	char u[40], q[400];
	int r;

	if (!a->uuid) {
		printf("%s\n", h->uuid);
		return 0;
	}
	r = luks_uuid_check(a->uuid, u);
	if (r < 0)
		return cli_fail(dev->name, r);
	snprintf(q, sizeof(q),
	         "Change the UUID of %s from %s to %s?\n"
	         "Are you sure? (Type 'YES' in capital letters): ",
	         dev->name, h->uuid, u);
	if (!a->batch && passphrase_confirm(q) < 0) {
		fprintf(stderr, "uraid: %s: not confirmed, nothing written\n", a->name);
		return 1;
	}
	r = luks_set_uuid(h, dev, u);
	if (r < 0)
		return cli_fail(dev->name, r);
	return 0;
}

/* is-luks: a header that loads, or one in a feature uraid lacks (it is
 * LUKS all the same: cryptsetup isLuks says so). */
static int luks_do_is_luks(struct luks_args *a, struct vol *dev)
{
	struct luks_hdr *h = NULL;
	int r, v;

	err_clear();
	r = luks_load(dev, &h);
	v = r == 0 ? h->version : r == -ENOTSUP ? luks_probe(dev) : 0;
	luks_hdr_free(h);
	if (v > 0 && a->verbose && r == 0)
		printf("%s: LUKS%d\n", dev->name, v);
	else if (v > 0 && a->verbose)
		printf("%s: LUKS%d (uraid cannot open it: %s)\n", dev->name, v, err_detail(r));
	if (v > 0)
		return 0;
	if (a->verbose)
		printf("not LUKS: %s\n", err_detail(r));
	return 1;
}

static int luks_do_restore(struct luks_args *a, struct vol *dev)
{
	struct vol *file = NULL;
	int r;

	r = file_member_open(a->backup_file, MEMBER_READONLY, &file);
	if (r < 0)
		return cli_fail(a->name, r);
	r = luks_header_restore(dev, file, a->force);
	vol_close(file);
	if (r < 0)
		return cli_fail(a->name, r);
	return 0;
}

static int luks_run(struct luks_args *a, int argc, char **argv)
{
	struct luks_hdr *h = NULL;
	struct vol *dev = NULL;
	int first, r, rc;

	first = luks_parse(a, argc, argv);
	if (first < 0)
		return first == -1 ? 0 : 2;
	if (a->cmd == LC_FORMAT && a->new_key_file) {
		fprintf(stderr,
		        "uraid: %s: --new-key-file is for luks-add-key and "
		        "luks-change-key\n",
		        a->name);
		return 2;
	}
	a->stack.no_luks = true;
	a->stack.readonly = a->cmd == LC_DUMP || a->cmd == LC_IS_LUKS || a->cmd == LC_BACKUP ||
	                    (a->cmd == LC_UUID && !a->uuid);
	/* A new header goes on what the members make as a whole, as
	 * cryptsetup luksFormat DISK does: a disk's partitions (or an
	 * array's LVs) are overwritten, not formatted one by one.  So does a
	 * restored one, where the old may be gone. */
	a->stack.whole = a->cmd == LC_FORMAT || a->cmd == LC_RESTORE;
	r = stack_open(argv + first, argc - first - (a->cmd == LC_KILL), &a->stack, &dev);
	if (r < 0)
		return cli_fail(a->name, r);
	if (a->cmd == LC_FORMAT || a->cmd == LC_RESTORE || a->cmd == LC_IS_LUKS) {
		rc = a->cmd == LC_FORMAT    ? luks_do_format(a, dev)
		     : a->cmd == LC_RESTORE ? luks_do_restore(a, dev)
		                            : luks_do_is_luks(a, dev);
		goto out;
	}
	r = luks_load(dev, &h);
	if (r < 0) {
		rc = cli_fail(a->name, r);
		goto out;
	}
	switch (a->cmd) {
	case LC_DUMP:
		rc = luks_do_dump(a, dev, h);
		break;
	case LC_KILL:
		rc = luks_do_kill(a, dev, h, argv[argc - 1]);
		break;
	case LC_UUID:
		rc = luks_do_uuid(a, dev, h);
		break;
	case LC_BACKUP:
		r = luks_header_backup(h, dev, a->backup_file);
		rc = r < 0 ? cli_fail(a->name, r) : 0;
		break;
	default:
		rc = luks_do_keys(a, dev, h);
		break;
	}
out:
	luks_hdr_free(h);
	vol_close(dev);
	return rc;
}

int cmd_luks_format(int argc, char **argv)
{
	struct luks_args a = {.cmd = LC_FORMAT, .name = "luks-format"};
	return luks_run(&a, argc, argv);
}

int cmd_luks_dump(int argc, char **argv)
{
	struct luks_args a = {.cmd = LC_DUMP, .name = "luks-dump"};
	return luks_run(&a, argc, argv);
}

int cmd_luks_add_key(int argc, char **argv)
{
	struct luks_args a = {.cmd = LC_ADD, .name = "luks-add-key"};
	return luks_run(&a, argc, argv);
}

int cmd_luks_remove_key(int argc, char **argv)
{
	struct luks_args a = {.cmd = LC_REMOVE, .name = "luks-remove-key"};
	return luks_run(&a, argc, argv);
}

int cmd_luks_change_key(int argc, char **argv)
{
	struct luks_args a = {.cmd = LC_CHANGE, .name = "luks-change-key"};
	return luks_run(&a, argc, argv);
}

int cmd_luks_kill_slot(int argc, char **argv)
{
	struct luks_args a = {.cmd = LC_KILL, .name = "luks-kill-slot"};
	return luks_run(&a, argc, argv);
}

int cmd_luks_uuid(int argc, char **argv)
{
	struct luks_args a = {.cmd = LC_UUID, .name = "luks-uuid"};
	return luks_run(&a, argc, argv);
}

int cmd_is_luks(int argc, char **argv)
{
	struct luks_args a = {.cmd = LC_IS_LUKS, .name = "is-luks"};
	return luks_run(&a, argc, argv);
}

int cmd_luks_header_backup(int argc, char **argv)
{
	struct luks_args a = {.cmd = LC_BACKUP, .name = "luks-header-backup"};
	return luks_run(&a, argc, argv);
}

int cmd_luks_header_restore(int argc, char **argv)
{
	struct luks_args a = {.cmd = LC_RESTORE, .name = "luks-header-restore"};
	return luks_run(&a, argc, argv);
}
