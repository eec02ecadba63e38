// Loads each named class from the classpath and resolves the types its members name, so a class
// whose dependencies are missing fails here rather than in the middle of a run. Run with the JDK's
// source launcher: java -cp CLASSPATH ClassProbe.java CLASS...
// Prints one line per class that failed (the class, then what was missing); exit 1 when any did.
public class ClassProbe {
    public static void main(String[] args) {
        int failed = 0;
        ClassLoader loader = ClassProbe.class.getClassLoader();
        for (String name : args) {
            try {
                // not initialised: static initialisers start loggers and read system properties
                Class<?> c = Class.forName(name, false, loader);
                c.getDeclaredMethods();
                c.getDeclaredFields();
                c.getDeclaredConstructors();
            } catch (ClassNotFoundException | LinkageError e) {
                failed++;
                System.out.println(name + ": " + e.getClass().getSimpleName() + " " + e.getMessage());
            }
        }
        System.exit(failed == 0 ? 0 : 1);
    }
}
