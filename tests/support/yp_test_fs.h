/* yp_test_fs.h - removing a test's scratch folder (made with mkdtemp) and everything below it.
 * Defines: yp_test_remove_tree. */
#ifndef YP_TEST_FS_H
#define YP_TEST_FS_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Removes dir and what it holds; symbolic links are removed, never followed. Best effort. */
static inline void yp_test_remove_tree(const char *dir) {
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[1024];
        struct stat sb;
        if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p) continue; /* too long: left */
        if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode)) yp_test_remove_tree(p);
        else unlink(p);
    }
    if (d) closedir(d);
    rmdir(dir);
}

#endif
