package dev.daggers.runtime;

import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.DescriptorProtos.FileDescriptorSet;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.DescriptorValidationException;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.InvalidProtocolBufferException;

import java.util.HashMap;
import java.util.Map;

/** Finds a message in a serialized FileDescriptorSet (the stencil format, compiled with --include_imports). */
final class DescriptorSets {
  private DescriptorSets() {}

  static Descriptor find(byte[] descriptorSet, String messageName) {
    FileDescriptorSet set;
    try {
      set = FileDescriptorSet.parseFrom(descriptorSet);
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalArgumentException("not a protobuf FileDescriptorSet: " + e.getMessage(), e);
    }
    Map<String, FileDescriptorProto> protos = new HashMap<>();
    for (FileDescriptorProto p : set.getFileList()) protos.put(p.getName(), p);
    Map<String, FileDescriptor> built = new HashMap<>();
    for (FileDescriptorProto p : set.getFileList()) {
      FileDescriptor fd = build(p.getName(), protos, built);
      String pkg = fd.getPackage();
      String local = pkg.isEmpty() ? messageName
          : messageName.startsWith(pkg + ".") ? messageName.substring(pkg.length() + 1) : null;
      if (local == null) continue;
      Descriptor d = findNested(fd, local);
      if (d != null) return d;
    }
    throw new IllegalArgumentException("message " + messageName + " is not in the descriptor set");
  }

  private static Descriptor findNested(FileDescriptor fd, String localName) {
    String[] parts = localName.split("\\.");
    Descriptor d = fd.findMessageTypeByName(parts[0]);
    for (int i = 1; d != null && i < parts.length; i++) d = d.findNestedTypeByName(parts[i]);
    return d;
  }

  private static FileDescriptor build(String name, Map<String, FileDescriptorProto> protos,
                                      Map<String, FileDescriptor> built) {
    FileDescriptor done = built.get(name);
    if (done != null) return done;
    FileDescriptorProto p = protos.get(name);
    if (p == null) throw new IllegalArgumentException("descriptor set lacks imported file " + name
        + " (compile it with --include_imports)");
    FileDescriptor[] deps = new FileDescriptor[p.getDependencyCount()];
    for (int i = 0; i < deps.length; i++) deps[i] = build(p.getDependency(i), protos, built);
    try {
      FileDescriptor fd = FileDescriptor.buildFrom(p, deps);
      built.put(name, fd);
      return fd;
    } catch (DescriptorValidationException e) {
      throw new IllegalArgumentException("invalid descriptor " + name + ": " + e.getMessage(), e);
    }
  }
}
