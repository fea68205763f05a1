/*
 * kaudit's file: scheme for the Spark driver JVMs kaudit starts itself (pipelines/spark/session.py).
 *
 * Hadoop's local file system sets the permissions of every directory it makes and every file it
 * creates (RawLocalFileSystem.mkOneDirWithMode, LocalFSFileOutputStream) through setPermission,
 * which without Hadoop's native library - the pyspark wheel has none - starts a `chmod` process
 * (Shell.execCommand): 3.5-4 ms of fork, exec and wait a time on the 2-core machine, about 900
 * times in the demo's two runs. This is that file system with setPermission done in-process by
 * java.nio, the same mode bits; a mode with the sticky bit, which java.nio cannot set, still goes
 * to Hadoop's own code. Everything else, checksums included, is Hadoop's LocalFileSystem.
 *
 * Built into <venv>/kaudit-spark.jar by `make` (python -m pipelines.spark.jar); set as
 * fs.file.impl on the driver's classpath only when that jar exists.
 */
package kaudit.hadoop;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

public class NioLocalFileSystem extends LocalFileSystem {
  public NioLocalFileSystem() {
    super(new Raw());
  }

  /** Hadoop's raw local file system, setPermission by java.nio. */
  public static class Raw extends RawLocalFileSystem {
    /** Mode bit i (0 = others' execute ... 8 = owner's read) as java.nio's permission. */
    private static final PosixFilePermission[] BITS = {
      PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_READ,
      PosixFilePermission.GROUP_EXECUTE, PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
      PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_READ,
    };

    @Override
    public void setPermission(Path p, FsPermission permission) throws IOException {
      int mode = permission.toShort();
      if ((mode & ~0777) != 0) {
        super.setPermission(p, permission);
        return;
      }
      Set<PosixFilePermission> set = EnumSet.noneOf(PosixFilePermission.class);
      for (int bit = 0; bit < BITS.length; bit++) {
        if ((mode & (1 << bit)) != 0) {
          set.add(BITS[bit]);
        }
      }
      Files.setPosixFilePermissions(pathToFile(p).toPath(), set);
    }
  }
}
